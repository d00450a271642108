import { html, type SafeHtml } from './html.ts';

const CHART_HEIGHT = 80;

export interface ChartBar {
  /** What the bar covers, e.g. "2026-11-21 14:00 UTC". */
  label: string;
  good: number;
  bad: number;
}

export interface ChartWords {
  good: string;
  bad: string;
  /** One bar per what: "hour", "day". */
  per: string;
  /** What is counted, for the summary: "Attempts", "Installs and uninstalls". */
  what: string;
}

/**
 * Two counts per bar, stacked, drawn on the server as SVG: no script, no inline style (the pages'
 * CSP forbids both); the colours come from the stylesheet's classes. With a y axis (0, half, the
 * highest count, gridlines), an x axis (the first, middle and last bar's label), a legend, and a
 * table twin of every bar for screen readers (the SVG itself is described in one sentence).
 */
export function stackedBarChart(bars: readonly ChartBar[], words: ChartWords): SafeHtml {
  const narrow = bars.length > 48;
  const width = narrow ? 3 : 12;
  const gap = narrow ? 1 : 4;
  const plot = Math.max(1, bars.length * (width + gap) - gap);
  const left = 28;
  const bottom = 18;
  const total = left + plot + 4;
  const height = CHART_HEIGHT + bottom + 6;
  const top = 6;
  const highest = Math.max(1, ...bars.map((b) => b.good + b.bad));
  const scale = (count: number) => Math.round((count / highest) * CHART_HEIGHT);
  const y = (count: number) => top + CHART_HEIGHT - scale(count);
  const drawn = bars.map((b, i) => {
    const x = left + i * (width + gap);
    const good = scale(b.good);
    const bad = scale(b.bad);
    return html`<g><title>${b.label}: ${b.good} ${words.good}, ${b.bad} ${words.bad}</title><rect class="chart-bg" x="${x}" y="${top}" width="${width}" height="${CHART_HEIGHT}"/>${
      bad > 0
        ? html`<rect class="chart-bad" x="${x}" y="${top + CHART_HEIGHT - good - bad}" width="${width}" height="${bad}"/>`
        : ''
    }${good > 0 ? html`<rect class="chart-ok" x="${x}" y="${top + CHART_HEIGHT - good}" width="${width}" height="${good}"/>` : ''}</g>`;
  });
  const ticks = [...new Set([0, Math.round(highest / 2), highest])];
  const yAxis = ticks.map(
    (t) =>
      html`<line class="chart-grid" x1="${left - 3}" x2="${left + plot}" y1="${y(t)}" y2="${y(t)}"/><text class="chart-tick" x="${left - 5}" y="${y(t) + 3}" text-anchor="end">${t}</text>`,
  );
  const xAt = (i: number) => left + i * (width + gap) + width / 2;
  const marks = bars.length
    ? [...new Set([0, Math.floor((bars.length - 1) / 2), bars.length - 1])].map(
        (i, n, all) =>
          html`<text class="chart-tick" x="${xAt(i)}" y="${top + CHART_HEIGHT + 13}" text-anchor="${n === 0 ? 'start' : n === all.length - 1 ? 'end' : 'middle'}">${shortLabel(bars[i]?.label ?? '')}</text>`,
      )
    : [];
  const first = bars[0]?.label ?? '';
  const last = bars[bars.length - 1]?.label ?? '';
  const summary = `${words.what} per ${words.per} from ${first} to ${last}, at most ${highest}: ${words.good} in green, ${words.bad} in red; the table below has every ${words.per}`;
  const swatch = (kind: string) =>
    html`<svg class="chart-swatch" width="10" height="10" aria-hidden="true"><rect class="${kind}" width="10" height="10"/></svg>`;
  return html`<figure class="chart-figure">
<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${total} ${height}" width="${total}" height="${height}" role="img" aria-label="${summary}">${yAxis}<line class="chart-axis" x1="${left}" x2="${left + plot}" y1="${top + CHART_HEIGHT}" y2="${top + CHART_HEIGHT}"/>${drawn}${marks}</svg>
<figcaption class="muted"><span>${words.what} per ${words.per} (count), ${first} to ${last}</span> <span class="chart-legend">${swatch('chart-ok')} <span class="legend-ok">${words.good}</span> ${swatch('chart-bad')} <span class="legend-bad">${words.bad}</span></span></figcaption>
<table class="sr-only"><caption>${words.what} per ${words.per}</caption><thead><tr><th scope="col">${words.per[0]?.toUpperCase()}${words.per.slice(1)}</th><th scope="col">${words.good}</th><th scope="col">${words.bad}</th></tr></thead><tbody>${bars.map(
    (b) => html`<tr><th scope="row">${b.label}</th><td>${b.good}</td><td>${b.bad}</td></tr>`,
  )}</tbody></table>
</figure>`;
}

/** An axis label: "2026-11-21 14:00 UTC" → "11-21 14:00", "2026-11-21" → "11-21". */
function shortLabel(label: string): string {
  const m = /^\d{4}-(\d{2}-\d{2})(?: (\d{2}:\d{2}))?/.exec(label);
  return m ? [m[1], m[2]].filter(Boolean).join(' ') : label;
}

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

/** The top of the y axis: the highest count, made even so the middle gridline is a whole count. */
function axisTop(highest: number): number {
  return highest <= 1 ? 1 : highest + (highest % 2);
}

/**
 * Two counts per bar, stacked, drawn on the server as SVG: no script, no inline style (the pages'
 * CSP forbids both); the colours come from the stylesheet's classes. The SVG holds the bars and
 * gridlines only and stretches to the width it is given; the y axis (0, half, the top), the x axis
 * (the first, middle and last bar's label) and the legend are HTML text beside it, so they keep
 * their size on a phone (issue 53 item 7). A table twin of every bar is for screen readers (the
 * SVG itself is described in one sentence; the axes' text is hidden from them as a repeat).
 */
export function stackedBarChart(bars: readonly ChartBar[], words: ChartWords): SafeHtml {
  const narrow = bars.length > 48;
  const width = narrow ? 3 : 12;
  const gap = narrow ? 1 : 4;
  const plot = Math.max(1, bars.length * (width + gap) - gap);
  const highest = Math.max(1, ...bars.map((b) => b.good + b.bad));
  const top = axisTop(highest);
  const scale = (count: number) => Math.round((count / top) * CHART_HEIGHT);
  const drawn = bars.map((b, i) => {
    const x = i * (width + gap);
    const good = scale(b.good);
    const bad = scale(b.bad);
    return html`<g><title>${b.label}: ${b.good} ${words.good}, ${b.bad} ${words.bad}</title><rect class="chart-bg" x="${x}" y="0" width="${width}" height="${CHART_HEIGHT}"/>${
      bad > 0
        ? html`<rect class="chart-bad" x="${x}" y="${CHART_HEIGHT - good - bad}" width="${width}" height="${bad}"/>`
        : ''
    }${good > 0 ? html`<rect class="chart-ok" x="${x}" y="${CHART_HEIGHT - good}" width="${width}" height="${good}"/>` : ''}</g>`;
  });
  // Evenly spaced, as the HTML labels beside them are: the top, its half (a whole count), 0.
  const ticks = top === 1 ? [1, 0] : [top, top / 2, 0];
  const grid = ticks.map((t) => {
    const y = CHART_HEIGHT - scale(t);
    return html`<line class="${t === 0 ? 'chart-axis' : 'chart-grid'}" x1="0" x2="${plot}" y1="${y}" y2="${y}" vector-effect="non-scaling-stroke"/>`;
  });
  const marks = bars.length
    ? [...new Set([0, Math.floor((bars.length - 1) / 2), bars.length - 1])].map(
        (i) => html`<span class="chart-tick">${shortLabel(bars[i]?.label ?? '')}</span>`,
      )
    : [];
  const first = bars[0]?.label ?? '';
  const last = bars[bars.length - 1]?.label ?? '';
  const summary = `${words.what} per ${words.per} from ${first} to ${last}, at most ${highest}: ${words.good} in green, ${words.bad} in red; the table below has every ${words.per}`;
  const swatch = (kind: string) =>
    html`<svg class="chart-swatch" width="10" height="10" aria-hidden="true"><rect class="${kind}" width="10" height="10"/></svg>`;
  return html`<figure class="chart-figure">
<div class="chart-plot">
<div class="chart-y" aria-hidden="true">${ticks.map((t) => html`<span class="chart-tick">${t}</span>`)}</div>
<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${plot} ${CHART_HEIGHT}" preserveAspectRatio="none" role="img" aria-label="${summary}">${grid}${drawn}</svg>
<div class="chart-x" aria-hidden="true">${marks}</div>
</div>
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

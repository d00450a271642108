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
 * CSP forbids both); the colours come from the stylesheet's classes.
 */
export function stackedBarChart(bars: readonly ChartBar[], words: ChartWords): SafeHtml {
  const narrow = bars.length > 48;
  const width = narrow ? 3 : 12;
  const gap = narrow ? 1 : 4;
  const total = bars.length * (width + gap) - gap;
  const highest = Math.max(1, ...bars.map((b) => b.good + b.bad));
  const scale = (count: number) => Math.round((count / highest) * CHART_HEIGHT);
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
  const first = bars[0]?.label ?? '';
  const last = bars[bars.length - 1]?.label ?? '';
  const summary = `${words.what} per ${words.per} from ${first} to ${last}: ${words.good} in green, ${words.bad} in red`;
  return html`<figure class="chart-figure">
<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${total} ${CHART_HEIGHT}" width="${total}" height="${CHART_HEIGHT}" role="img" aria-label="${summary}">${drawn}</svg>
<figcaption class="muted">${first} to ${last}, one bar per ${words.per} (max ${highest}): <span class="legend-ok">${words.good}</span>, <span class="legend-bad">${words.bad}</span></figcaption>
</figure>`;
}

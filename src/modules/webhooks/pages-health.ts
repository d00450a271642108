import { HOUR, MINUTE } from '../../lib/clock.ts';
import { stackedBarChart } from '../../web/chart.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { timeTag } from '../../web/time.ts';
import { attemptAnswer } from './attempt-words.ts';
import type { EndpointHealth, EndpointStats, HourlyCount, StatsWindow } from './stats.ts';

/** An endpoint failing longer than this gets a warning in the list. */
export const FAILING_WARNING_MS = HOUR;

export function percent(rate: number | null): string {
  if (rate === null) return 'no attempts';
  const value = rate * 100;
  return `${Number.isInteger(value) ? value : value.toFixed(1)}%`;
}

/** "2 d 22 h", "5 h 10 min", "7 min": precise enough for a warning, short enough for a table. */
export function spanWords(ms: number): string {
  const minutes = Math.max(0, Math.floor(ms / MINUTE));
  const days = Math.floor(minutes / (24 * 60));
  const hours = Math.floor((minutes % (24 * 60)) / 60);
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes % 60} min`;
  return `${minutes} min`;
}

/** The warning for an endpoint failing for more than an hour, with the time left before the 3-day rule disables it. */
export function failingWarning(
  health: Pick<EndpointHealth, 'failing_since' | 'disables_at'>,
  now: Date,
): SafeHtml | '' {
  const since = health.failing_since;
  if (!since || !health.disables_at) return '';
  const failingFor = now.getTime() - since.getTime();
  if (failingFor <= FAILING_WARNING_MS) return '';
  const left = health.disables_at.getTime() - now.getTime();
  return html`<span class="badge bad warning" role="status">Failing for ${spanWords(failingFor)}: disabled in ${spanWords(left)} unless a delivery succeeds</span>`;
}

const hourLabel = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/** Successes and failures per hour as stacked bars. */
export function hourlyChart(hourly: readonly HourlyCount[]): SafeHtml {
  return stackedBarChart(
    hourly.map((h) => ({ label: hourLabel(h.hour), good: h.succeeded, bad: h.failed })),
    { good: 'succeeded', bad: 'failed', per: 'hour', what: 'Attempts' },
  );
}

const WINDOW_WORDS: Record<StatsWindow, string> = { '24h': 'last 24 hours', '7d': 'last 7 days' };

/** The endpoint page's health card: the figures of GET .../stats and the hourly chart. */
export function healthCard(endpointId: string, stats: EndpointStats, now: Date): SafeHtml {
  const base = `/dashboard/webhooks/${endpointId}`;
  const other: StatsWindow = stats.window === '24h' ? '7d' : '24h';
  const failure = stats.last_failure;
  const failingSince = stats.failing_since ? new Date(stats.failing_since) : null;
  const disablesAt = stats.disables_at ? new Date(stats.disables_at) : null;
  return html`<section class="card" aria-label="Health">
<h2>Health, ${WINDOW_WORDS[stats.window]}</h2>
<p><a href="${base}?window=${other}">Show the ${WINDOW_WORDS[other]}</a></p>
<dl class="figures">
<div><dt>Attempts</dt><dd data-figure="attempts">${stats.attempts}</dd></div>
<div><dt>Succeeded</dt><dd data-figure="succeeded">${stats.succeeded}</dd></div>
<div><dt>Failed</dt><dd data-figure="failed">${stats.failed}</dd></div>
<div><dt>Success rate</dt><dd data-figure="success_rate">${percent(stats.success_rate)}</dd></div>
<div><dt>Median duration</dt><dd data-figure="p50_ms">${stats.p50_ms === null ? '-' : `${stats.p50_ms} ms`}</dd></div>
<div><dt>95th percentile</dt><dd data-figure="p95_ms">${stats.p95_ms === null ? '-' : `${stats.p95_ms} ms`}</dd></div>
</dl>
${
  failingSince
    ? html`<p>Failing since ${timeTag(stats.failing_since)} (${spanWords(now.getTime() - failingSince.getTime())})${
        disablesAt
          ? html`; disabled in ${spanWords(disablesAt.getTime() - now.getTime())} unless a delivery succeeds`
          : ''
      }.</p>`
    : html`<p class="muted">Not failing: the last answer was a success, or nothing was sent yet.</p>`
}
${
  failure
    ? html`<p>Last failure: ${timeTag(failure.attempted_at, now)}, ${attemptAnswer(failure)} (<a href="/dashboard/webhooks/deliveries/${failure.delivery_id}">delivery</a>).</p>`
    : ''
}
${hourlyChart(stats.hourly)}
<p class="muted">Counts scheduled attempts and replays; test messages are left out.</p>
</section>`;
}

import type { AppContext } from '../../context.ts';
import { problemCodes } from '../../lib/errors.ts';
import { stackedBarChart } from '../../web/chart.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { percent } from '../webhooks/pages-health.ts';
import { type AppInstallation, type AppStats, appStats, listAppInstallations } from './service.ts';

const day = (iso: string) => iso.slice(0, 10);

/** What each code means, for the codes an app is answered most (RFC 6749 codes are not problems). */
function meaning(code: string): string {
  return Object.hasOwn(problemCodes, code) ? problemCodes[code as keyof typeof problemCodes][1] : '';
}

const STATUS_WORDS: Record<AppInstallation['status'], SafeHtml> = {
  active: html`<span class="badge ok">active</span>`,
  needs_approval: html`<span class="badge bad">needs approval</span>`,
  suspended: html`<span class="badge bad">suspended</span>`,
  uninstalled: html`<span class="badge">uninstalled</span>`,
};

function installationRows(installations: AppInstallation[]): SafeHtml {
  if (installations.length === 0) return html`<p class="muted">No company has installed the app yet.</p>`;
  const rows = installations.map(
    (inst) => html`<tr>
<td>${inst.company_name}${inst.customer_account_id ? html` <span class="muted">(one merchant account)</span>` : ''}</td>
<td>${STATUS_WORDS[inst.status]}${inst.status === 'needs_approval' ? html`<div class="muted">The person who approved left the company: nothing flows until someone approves again.</div>` : ''}</td>
<td>${day(inst.installed_at)}</td>
<td>${inst.uninstalled_at ? day(inst.uninstalled_at) : ''}</td>
<td>${inst.uninstall_reason ?? ''}</td>
</tr>`,
  );
  return html`<div class="table-wrap"><table class="installations"><thead><tr><th>Company</th><th>Status</th><th>Installed</th><th>Uninstalled</th><th>Reason</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function figures(stats: AppStats): SafeHtml {
  const errors = stats.api.by_status['4xx'] + stats.api.by_status['5xx'];
  return html`<dl class="figures">
<div><dt>Active installations</dt><dd data-figure="active">${stats.installations.active}</dd></div>
<div><dt>Installs, 30 days</dt><dd data-figure="installed">${stats.installations.installed}</dd></div>
<div><dt>Uninstalls, 30 days</dt><dd data-figure="uninstalled">${stats.installations.uninstalled}</dd></div>
<div><dt>API requests</dt><dd data-figure="requests">${stats.api.requests}</dd></div>
<div><dt>API errors</dt><dd data-figure="errors">${errors}</dd></div>
</dl>`;
}

function topErrors(stats: AppStats): SafeHtml {
  if (stats.api.top_errors.length === 0) return html`<p class="muted">No API errors in 30 days.</p>`;
  const rows = stats.api.top_errors.map(
    (e) => html`<tr><td><code>${e.code}</code></td><td>${e.count}</td><td>${meaning(e.code)}</td></tr>`,
  );
  return html`<div class="table-wrap"><table class="top-errors"><thead><tr><th>Code</th><th>Times</th><th>What it means</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function health(stats: AppStats): SafeHtml {
  const { tokens, app_events: events, endpoints, subscriptions } = stats;
  return html`<dl class="figures">
<div><dt>Tokens issued</dt><dd data-figure="issued">${tokens.issued}</dd></div>
<div><dt>Refreshed</dt><dd data-figure="refreshed">${tokens.refreshed}</dd></div>
<div><dt>Refused (invalid_grant)</dt><dd data-figure="invalid_grant">${tokens.invalid_grant}</dd></div>
<div><dt>Refused without a client secret</dt><dd data-figure="invalid_grant_anonymous">${tokens.invalid_grant_anonymous}</dd></div>
<div><dt>App events delivered</dt><dd data-figure="app_events">${percent(events.success_rate)}</dd></div>
<div><dt>Endpoint deliveries</dt><dd data-figure="endpoints">${percent(endpoints.success_rate)}</dd></div>
<div><dt>Endpoints failing</dt><dd data-figure="failing">${endpoints.failing}</dd></div>
<div><dt>Subscription deliveries</dt><dd data-figure="subscriptions">${percent(subscriptions.success_rate)}</dd></div>
<div><dt>Installations failing</dt><dd data-figure="subscriptions_failing">${subscriptions.failing}</dd></div>
</dl>
${tokens.invalid_grant > 0 ? html`<p class="muted">A refused refresh usually means the app kept an old refresh token: each refresh returns a new one, and the old one is spent.</p>` : ''}`;
}

/** The top of an app's page in the developer portal: how the app is doing over 30 days. */
export async function appOverview(ctx: AppContext, developerId: string, appId: string): Promise<SafeHtml> {
  const [stats, installations] = await Promise.all([
    appStats(ctx, developerId, appId, '30d'),
    listAppInstallations(ctx, developerId, appId, { limit: 50 }),
  ]);
  const installs = stackedBarChart(
    stats.daily.map((b) => ({ label: day(b.at), good: b.installs, bad: b.uninstalls })),
    { good: 'installs', bad: 'uninstalls', per: 'day', what: 'Installs and uninstalls' },
  );
  const requests = stackedBarChart(
    stats.daily.map((b) => ({ label: day(b.at), good: b.api_requests - b.api_errors, bad: b.api_errors })),
    { good: 'succeeded', bad: 'errors', per: 'day', what: 'API requests' },
  );
  return html`<section class="card console"><h2>How the app is doing</h2>
${figures(stats)}
<h3>Installs and uninstalls per day</h3>${installs}
<h3>API requests per day</h3>${requests}
<h3>Top API errors</h3>${topErrors(stats)}
<h3>Tokens and event delivery</h3>${health(stats)}
<h3>Installations</h3>${installationRows(installations.data)}
</section>`;
}

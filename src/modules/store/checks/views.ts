import { html, type SafeHtml } from '../../../web/html.ts';
import type { SubmissionStatus } from '../tables.ts';
import type { Check } from './check.ts';

const CHECK_LABELS: Record<Check['name'], string> = {
  events_url_rejects_bad_signature: 'Events URL refuses a wrong signature',
  events_url_accepts_signed_test: 'Events URL accepts a signed test message',
  scope_justifications_complete: 'Every scope is justified',
  listing_media_valid: 'Icon and screenshots are valid',
};

function exchange(check: Check): SafeHtml | string {
  const { sent, received } = check.detail;
  if (!sent) return '';
  const headers = Object.entries(sent.headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  return html`<details><summary>What was sent and what came back</summary>
<p class="muted">POST <code>${sent.url}</code></p>
<pre>${headers}\n\n${sent.body}</pre>
${
  received
    ? html`<p class="muted">${received.status_code !== null ? `Answer ${received.status_code}` : `No answer: ${received.error ?? ''}`} in ${received.duration_ms} ms${received.body ? ', first 4 KB:' : ''}</p>
${received.body ? html`<pre>${received.body}</pre>` : ''}`
    : ''
}</details>`;
}

/** The automated checks, each passed or failed with its one-line summary and the exchange behind it. */
export function checksList(checks: Check[]): SafeHtml {
  return html`<ul class="plain checks">${checks.map(
    (check) => html`<li class="check-result">
<span class="badge ${check.passed ? 'ok' : 'bad'}">${check.passed ? 'passed' : 'failed'}</span>
<strong>${CHECK_LABELS[check.name] ?? check.name}</strong> <code class="muted">${check.name}</code>
<p>${check.detail.summary}</p>${exchange(check)}</li>`,
  )}</ul>`;
}

export function statusBadge(status: SubmissionStatus): SafeHtml {
  const kind = status === 'approved' ? 'ok' : status === 'rejected' ? 'bad' : '';
  return html`<span class="badge ${kind}">${status.replace('_', ' ')}</span>`;
}

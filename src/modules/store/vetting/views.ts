import { outsidePlaces } from '../../../web/dashboard.ts';
import { html, type SafeHtml } from '../../../web/html.ts';
import { csrfField, headerTools, layout, placesNav } from '../../../web/layout.ts';
import { confirmLink } from '../../../web/pages/confirm.ts';
import { timeTag } from '../../../web/time.ts';
import { checksList, statusBadge } from '../checks/views.ts';
import { categoryLabel } from '../listing/categories.ts';
import { characterCount, type Listing } from '../listing/rules.ts';
import type { MediaSet } from '../media/images.ts';
import { imagePath } from '../media/views.ts';
import type { SubmissionStatus } from '../tables.ts';
import type { QueueItem, ReviewedSubmission } from './service.ts';

export interface ConsolePage {
  csrf: string;
  /** The clock's now, for "3 min ago" beside each time. */
  now?: Date;
  flash?: { kind: 'ok' | 'error'; message: string } | null;
}

/** The review console's frame: its own navigation, since reviewers need no company. */
export function consolePage(page: ConsolePage, title: string, body: SafeHtml): SafeHtml {
  const nav = placesNav(outsidePlaces(true, '/review'));
  return layout(
    { title: `${title} · Review`, nav, tools: headerTools(page.csrf), flash: page.flash ?? null },
    body,
  );
}

const FILTERS: Array<[SubmissionStatus | '', string]> = [
  ['', 'Waiting'],
  ['submitted', 'Submitted'],
  ['in_review', 'In review'],
  ['changes_requested', 'Changes requested'],
  ['approved', 'Approved'],
  ['rejected', 'Rejected'],
  ['withdrawn', 'Withdrawn'],
];

export function queuePage(
  page: ConsolePage,
  status: SubmissionStatus | '',
  items: QueueItem[],
  nextCursor: string | null,
): SafeHtml {
  const rows = items.map((item) => {
    const passed = item.checks.filter((c) => c.passed).length;
    return html`<tr><td><a href="/review/submissions/${item.id}">${item.app_name}</a></td>
<td>${item.developer_email}</td><td>${item.updates_published_app ? 'update' : 'new listing'}</td>
<td>${statusBadge(item.status)}</td><td>${timeTag(item.created_at, page.now)}</td>
<td><span class="badge ${passed === item.checks.length ? 'ok' : 'bad'}">${passed} / ${item.checks.length} checks</span></td></tr>`;
  });
  return consolePage(
    page,
    'Review queue',
    html`<h1>Review queue</h1>
<nav class="tabs" aria-label="Status">${FILTERS.map(
      ([value, label]) =>
        html`<a href="/review${value ? `?status=${value}` : ''}"${value === status ? html` aria-current="page"` : ''}>${label}</a>`,
    )}</nav>
<p class="muted">Oldest first.</p>
${
  items.length > 0
    ? html`<div class="table-wrap"><table><thead><tr><th>App</th><th>Developer</th><th>Kind</th><th>Status</th><th>Sent</th><th>Checks</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="muted">Nothing here.</p>`
}
${nextCursor ? html`<p class="pager"><a class="button secondary" rel="next" href="/review?${new URLSearchParams({ ...(status ? { status } : {}), cursor: nextCursor }).toString()}">Next</a></p>` : ''}`,
  );
}

/** Which moderation a reviewer may take on an app in its status (apps/moderation.ts). */
const MODERATION: Record<string, Array<{ action: string; label: string }>> = {
  published: [
    { action: 'delist', label: 'Delist' },
    { action: 'suspend', label: 'Suspend' },
  ],
  delisted: [
    { action: 'reinstate', label: 'List again' },
    { action: 'suspend', label: 'Suspend' },
  ],
  private: [{ action: 'suspend', label: 'Suspend' }],
  suspended: [{ action: 'reinstate', label: 'Reinstate' }],
};

/**
 * Suspend, delist or reinstate, each with the reason the audit log keeps. Suspending and delisting
 * ask once more on a page of their own (a link to it), where the reason is given.
 */
function moderationForms(app: { id: string; status: string }, submissionId: string, csrf: string): SafeHtml {
  const forms = (MODERATION[app.status] ?? []).map(({ action, label }) =>
    action === 'suspend' || action === 'delist'
      ? html`<p>${confirmLink(
          `/review/apps/${encodeURIComponent(app.id)}/${action}?${new URLSearchParams({ submission_id: submissionId })}`,
          label,
          action === 'suspend' ? 'danger' : 'secondary',
        )}</p>`
      : html`<form method="post" action="/review/apps/${app.id}/${action}" class="inline-form">
<input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="submission_id" value="${submissionId}">
<label>Reason <input name="reason" required pattern=".*\S.*" maxlength="1000"></label>
<button type="submit" class="secondary">${label}</button></form>`,
  );
  return html`${forms}`;
}

function shown(value: unknown): string {
  if (value === null || value === undefined || value === '') return '—';
  return Array.isArray(value) ? value.join('\n') : String(value);
}

const FIELD_LABELS: Record<string, string> = {
  name: 'Name',
  description: 'Description',
  homepage_url: 'Homepage',
  privacy_url: 'Privacy policy',
  support_url: 'Support',
  redirect_uris: 'Redirect URIs',
  scopes: 'Scopes',
  events_url: 'Events URL',
};

function comparison(submission: ReviewedSubmission): SafeHtml {
  const submitted: Record<string, unknown> = { ...submission.app, events_url: submission.events_url };
  const live = submission.live as unknown as Record<string, unknown>;
  const rows = Object.entries(FIELD_LABELS).map(([field, label]) => {
    const changed = submission.changes.includes(field);
    return html`<tr${changed ? html` class="changed"` : ''}><th scope="row">${label}${changed ? html` <span class="badge">changes</span>` : ''}</th>
<td class="pre">${shown(submitted[field])}</td><td class="pre">${shown(live[field])}</td></tr>`;
  });
  return html`<div class="table-wrap"><table class="compare"><thead><tr><th>Field</th><th>Submitted</th><th>Live now (${submission.live.status})</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function listingFields(listing: Listing): SafeHtml {
  return html`<dl class="fields">
<dt>Tagline</dt><dd>${listing.tagline}</dd>
<dt>Category</dt><dd>${categoryLabel(listing.category, 'en')} <code class="muted">${listing.category}</code></dd>
<dt>App URL</dt><dd><code>${listing.app_url}</code></dd>
<dt>English</dt><dd class="pre">${listing.description_en}</dd>
<dt lang="es">Español</dt><dd class="pre" lang="es">${listing.description_es}</dd>
</dl>`;
}

function justifications(listing: Listing): SafeHtml {
  return html`<ul class="plain justifications">${listing.scope_justifications.map(
    (j) =>
      html`<li><code>${j.scope}</code> <span class="muted">(${characterCount(j.justification)} characters)</span><br>${j.justification}</li>`,
  )}</ul>`;
}

function actions(page: ConsolePage, submission: ReviewedSubmission): SafeHtml | string {
  if (submission.conflict) return html`<p class="flash error" role="note">${submission.conflict}</p>`;
  if (submission.status === 'submitted') {
    return html`<form class="inline" method="post" action="/review/submissions/${submission.id}/start">${csrfField(page.csrf)}
<button type="submit">Start review</button></form>`;
  }
  if (submission.status !== 'in_review') return '';
  return html`<form class="stack card" method="post" action="/review/submissions/${submission.id}/decision">${csrfField(page.csrf)}
<fieldset><legend>Decision</legend>
<label class="check"><input type="radio" name="decision" value="approved" required> Approve: publish these values and this listing</label>
<label class="check"><input type="radio" name="decision" value="changes_requested"> Request changes</label>
<label class="check"><input type="radio" name="decision" value="rejected"> Reject</label>
</fieldset>
<label>Note to the developer (required unless approving) <textarea name="note" rows="3" maxlength="4000"></textarea></label>
<p><button type="submit">Record the decision</button></p>
</form>`;
}

export function reviewPage(page: ConsolePage, submission: ReviewedSubmission): SafeHtml {
  return consolePage(
    page,
    submission.app.name,
    html`<h1>${submission.app.name} ${statusBadge(submission.status)}</h1>
<p class="muted">${submission.updates_published_app ? 'An update of a published app' : 'A new listing'} from ${submission.developer.name} &lt;${submission.developer.email}&gt;, sent ${timeTag(submission.created_at, page.now)}.
<a href="/review">Back to the queue</a></p>
${submission.note ? html`<p class="card"><strong>Note from the developer:</strong> ${submission.note}</p>` : ''}
${submission.reviewer_note ? html`<p class="card"><strong>Reviewer's note:</strong> ${submission.reviewer_note}</p>` : ''}
${actions(page, submission)}
<section class="card"><h2>The app: submitted beside live</h2>${comparison(submission)}</section>
<section class="card"><h2>Scope justifications</h2>${justifications(submission.listing)}</section>
<section class="card"><h2>Automated checks</h2>${checksList(submission.checks)}</section>
${mediaComparison(submission.media, submission.live_media)}
<section class="card"><h2>The listing</h2>${listingFields(submission.listing)}
${submission.live_listing ? html`<details><summary>The listing in the store now</summary>${listingFields(submission.live_listing)}</details>` : ''}
</section>
<section class="card app-moderation" id="app-${submission.app_id}"><h2>The app in the store</h2>
<p>Status: <span class="badge">${submission.live.status}</span> <code class="muted">${submission.app_id}</code></p>
${moderationForms({ id: submission.app_id, status: submission.live.status }, submission.id, page.csrf)}
</section>`,
  );
}

/** The review console: the submission's images beside the store's. */
export function mediaComparison(submitted: MediaSet, live: MediaSet): SafeHtml {
  const column = (set: MediaSet, label: string) => html`<div><h3>${label}</h3>
${set.icon ? html`<p><img class="app-icon large" src="${imagePath(set.icon.url)}" alt="Icon" width="96" height="96"></p>` : html`<p class="muted">No icon.</p>`}
${
  set.screenshots.length > 0
    ? html`<ul class="plain screenshots">${set.screenshots.map(
        (s, i) =>
          html`<li><a href="${imagePath(s.url)}"><img src="${imagePath(s.url)}" alt="Screenshot ${i + 1}" loading="lazy"></a></li>`,
      )}</ul>`
    : html`<p class="muted">No screenshots.</p>`
}</div>`;
  const same =
    submitted.icon?.name === live.icon?.name &&
    submitted.screenshots.map((s) => s.name).join() === live.screenshots.map((s) => s.name).join();
  return html`<section class="card"><h2>Images ${same ? html`<span class="muted">(unchanged)</span>` : html`<span class="badge">changes</span>`}</h2>
<div class="media-compare">${column(submitted, 'Submitted')}${column(live, 'In the store now')}</div></section>`;
}

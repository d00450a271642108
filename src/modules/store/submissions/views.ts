import type { FieldError } from '../../../lib/errors.ts';
import { html, type SafeHtml } from '../../../web/html.ts';
import { csrfField } from '../../../web/layout.ts';
import { SCOPE_DESCRIPTIONS, SCOPES } from '../../accounts/roles.ts';
import { type PortalPage, portalPage } from '../../apps/portal-views.ts';
import type { App } from '../../apps/service.ts';
import type { Check } from '../checks/check.ts';
import { checksList, statusBadge } from '../checks/views.ts';
import { CATEGORIES } from '../listing/categories.ts';
import {
  characterCount,
  DESCRIPTION_MAX,
  JUSTIFICATION_MAX,
  JUSTIFICATION_MIN,
  type Listing,
  TAGLINE_MAX,
} from '../listing/rules.ts';
import type { Submission } from './service.ts';

/** Everything the submission form holds, as typed: the listing, the app's reviewed values, the note. */
export interface SubmissionFormValues {
  name: string;
  description: string;
  homepage_url: string;
  privacy_url: string;
  support_url: string;
  redirect_uris: string[];
  scopes: string[];
  events_url: string;
  tagline: string;
  category: string;
  app_url: string;
  description_en: string;
  description_es: string;
  justifications: Record<string, string>;
  note: string;
}

/** The form starts from the live app and the last listing the developer wrote, if any. */
export function formDefaults(app: App, last: Listing | null): SubmissionFormValues {
  return {
    name: app.name,
    description: app.description,
    homepage_url: app.homepage_url ?? '',
    privacy_url: app.privacy_url ?? '',
    support_url: app.support_url ?? '',
    redirect_uris: app.redirect_uris,
    scopes: app.scopes,
    events_url: app.events_url ?? '',
    tagline: last?.tagline ?? '',
    category: last?.category ?? '',
    app_url: last?.app_url ?? '',
    description_en: last?.description_en ?? '',
    description_es: last?.description_es ?? '',
    justifications: Object.fromEntries(
      (last?.scope_justifications ?? []).map((j) => [j.scope, j.justification]),
    ),
    note: '',
  };
}

const countId = (scope: string) => `count-${scope.replace(/\W/g, '-')}`;

/** The count as the script writes it too, so the page reads the same before any script runs. */
function countText(text: string): string {
  const count = characterCount(text);
  return `${count} / ${JUSTIFICATION_MAX} characters${count < JUSTIFICATION_MIN ? ` (at least ${JUSTIFICATION_MIN})` : ''}`;
}

function justificationField(scope: (typeof SCOPES)[number], values: SubmissionFormValues): SafeHtml {
  const value = values.justifications[scope] ?? '';
  // Every field is on the page; the script hides those of scopes not ticked. Without the script
  // a person sees them all, and the ones of scopes not requested are ignored.
  return html`<div class="justification" data-scope="${scope}">
<label>${SCOPE_DESCRIPTIONS[scope]} <code>${scope}</code>
<textarea name="justification_${scope}" rows="2" maxlength="${JUSTIFICATION_MAX}" data-min="${JUSTIFICATION_MIN}" data-max="${JUSTIFICATION_MAX}" aria-describedby="${countId(scope)}">${value}</textarea></label>
<p class="muted count" id="${countId(scope)}" aria-live="polite">${countText(value)}</p>
</div>`;
}

function errorList(errors: FieldError[]): SafeHtml | string {
  if (errors.length === 0) return '';
  return html`<ul class="flash error" role="alert">${errors.map(
    (e) => html`<li>${e.path.replace(/^\/(listing\/|app\/)?/, '')}: ${e.message}</li>`,
  )}</ul>`;
}

export function submissionForm(
  page: PortalPage,
  app: App,
  values: SubmissionFormValues,
  errors: FieldError[],
): SafeHtml {
  const text = (name: keyof SubmissionFormValues, label: string, type = 'url') =>
    html`<label>${label} <input type="${type}" name="${name}" value="${values[name] as string}" maxlength="2000"></label>`;
  const update = app.status === 'published';
  return portalPage(
    page,
    `Submit ${app.name}`,
    html`<h1>${update ? 'Submit an update of' : 'Submit'} ${app.name}</h1>
<p class="muted">${
      update
        ? 'The store and the live app keep what was approved until a reviewer approves this update.'
        : 'A reviewer checks the listing and the app; approval publishes it in the App Store of every company.'
    }</p>
${errorList(errors)}
<form class="stack" id="submission-form" method="post" action="/developer/apps/${app.id}/submissions">
${csrfField(page.csrf)}
<section class="card stack"><h2>The listing</h2>
<label>Tagline <input name="tagline" value="${values.tagline}" maxlength="${TAGLINE_MAX}" required></label>
<label>Category <select name="category" required><option value="">Choose a category</option>${CATEGORIES.map(
      (c) => html`<option value="${c.id}"${values.category === c.id ? html` selected` : ''}>${c.en}</option>`,
    )}</select></label>
${text('app_url', 'App URL (https: the page of your app that starts installation)')}
<label>Description in English <textarea name="description_en" rows="4" maxlength="${DESCRIPTION_MAX}" required>${values.description_en}</textarea></label>
<label lang="es">Descripción en español <textarea name="description_es" rows="4" maxlength="${DESCRIPTION_MAX}" required>${values.description_es}</textarea></label>
</section>
<section class="card stack"><h2>Why the app needs each scope</h2>
<p class="muted">In your own words, ${JUSTIFICATION_MIN} to ${JUSTIFICATION_MAX} characters for each scope the app requests (below); the others are ignored. Companies read it before they install.</p>
${SCOPES.map((scope) => justificationField(scope, values))}
</section>
<section class="card stack"><h2>The app as reviewers will approve it</h2>
<p class="muted">Change a value here to propose it: the live app takes it only when the submission is approved.</p>
<label>Name <input name="name" value="${values.name}" maxlength="100" required></label>
<label>Description (shown when people approve) <textarea name="description" rows="3" maxlength="1000" required>${values.description}</textarea></label>
${text('homepage_url', 'Homepage')}${text('privacy_url', 'Privacy policy (required)')}${text('support_url', 'Support (required)')}
<label>Redirect URIs, one per line <textarea name="redirect_uris" rows="3" maxlength="21000" required>${values.redirect_uris.join('\n')}</textarea></label>
<fieldset><legend>Scopes the app requests</legend>${SCOPES.map(
      (scope) =>
        html`<label class="check"><input type="checkbox" name="scopes" value="${scope}"${values.scopes.includes(scope) ? html` checked` : ''}> ${SCOPE_DESCRIPTIONS[scope]} <code class="muted">${scope}</code></label>`,
    )}</fieldset>
${text('events_url', 'Events URL (required; it must refuse a wrong signature and accept a signed test)')}
</section>
<label>Note to the reviewer (optional) <textarea name="note" rows="2" maxlength="2000">${values.note}</textarea></label>
<p><button type="submit">Submit for review</button> <a class="button secondary" href="/developer/apps/${app.id}/submissions">Cancel</a></p>
</form>
<script src="/static/submission-form.js" defer></script>`,
  );
}

function submissionCard(page: PortalPage, app: App, submission: Submission): SafeHtml {
  const waiting = submission.status === 'submitted' || submission.status === 'in_review';
  return html`<section class="card submission" id="${submission.id}">
<h3>${statusBadge(submission.status)} ${submission.updates_published_app ? 'Update' : 'Listing'} sent ${submission.created_at.slice(0, 16).replace('T', ' ')} UTC</h3>
${submission.decided_at ? html`<p class="muted">Decided ${submission.decided_at.slice(0, 16).replace('T', ' ')} UTC</p>` : ''}
${submission.reviewer_note ? html`<p class="flash ${submission.status === 'approved' ? 'ok' : 'error'} reviewer-note"><strong>Reviewer:</strong> ${submission.reviewer_note}</p>` : ''}
<p>${submission.app.name}: <em>${submission.listing.tagline}</em></p>
<h4>Automated checks</h4>
${checksList(submission.checks)}
${
  waiting
    ? html`<form class="inline" method="post" action="/developer/apps/${app.id}/submissions/${submission.id}/withdraw">${csrfField(page.csrf)}
<button class="secondary" type="submit">Withdraw</button> <span class="muted">The app stays as it is.</span></form>`
    : ''
}
</section>`;
}

export function submissionHistory(
  page: PortalPage,
  app: App,
  submissions: Submission[],
  justChecked: Check[] | null,
): SafeHtml {
  const waiting = submissions.some((s) => s.status === 'submitted' || s.status === 'in_review');
  return portalPage(
    page,
    `${app.name}: App Store`,
    html`<h1>${app.name} <span class="badge">${app.status}</span></h1>
<p><a href="/developer/apps/${app.id}">Back to the app</a></p>
<section class="card"><h2>App Store</h2>
<p><a class="button secondary" href="/developer/apps/${app.id}/listing-media">Icon and screenshots</a></p>
${
  waiting
    ? html`<p class="muted">A submission is waiting for review. Withdraw it to send another.</p>`
    : html`<p><a class="button" href="/developer/apps/${app.id}/submissions/new">${app.status === 'published' ? 'Submit an update' : 'Submit to the App Store'}</a></p>`
}
${
  app.status === 'published'
    ? html`<p><a class="button danger" href="/developer/apps/${app.id}/unpublish">Unpublish</a> <span class="muted">Off the store; companies that installed it keep it.</span></p>`
    : ''
}
</section>
<section class="card"><h2>Check my events URL</h2>
<p class="muted">Sends the two test messages a submission sends: one with a wrong signature (it must get 4xx) and a signed <code>app.uninstalled</code> test (it must get 2xx). Nothing is submitted.</p>
<form class="inline" method="post" action="/developer/apps/${app.id}/events-url-checks">${csrfField(page.csrf)}
<button class="secondary" type="submit">Check my events URL</button> <code class="muted">${app.events_url ?? 'no events URL yet'}</code></form>
${justChecked ? html`<h3>Results</h3>${checksList(justChecked)}` : ''}
</section>
<h2>Submissions</h2>
${
  submissions.length > 0
    ? submissions.map((s) => submissionCard(page, app, s))
    : html`<p class="muted">Nothing submitted yet.</p>`
}`,
  );
}

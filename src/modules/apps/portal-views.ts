import type { FieldError } from '../../lib/errors.ts';
import { outsidePlaces } from '../../web/dashboard.ts';
import type { Flash } from '../../web/flash.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { csrfField, headerTools, layout, placesNav } from '../../web/layout.ts';
import { timeTag } from '../../web/time.ts';
import { SCOPE_DESCRIPTIONS, SCOPES } from '../accounts/roles.ts';
import type { App } from './service.ts';
import type { AppVersion } from './versions.ts';

/** The developer portal's pages. They need a signed-in person, not a company, so they use the plain layout. */
export interface PortalPage {
  csrf: string;
  flash?: Flash | null;
}

export function portalPage(page: PortalPage, title: string, body: SafeHtml): SafeHtml {
  const nav = placesNav(outsidePlaces(false, '/developer'));
  return layout({ title, nav, tools: headerTools(page.csrf), flash: page.flash ?? null }, body);
}

/** A secret or link to copy: a readonly field, selectable in one click, with no script. */
export function copyField(label: string, value: string, name: string): SafeHtml {
  return html`<label>${label} <input class="secret" name="${name}" value="${value}" readonly></label>`;
}

export function appList(page: PortalPage, apps: App[]): SafeHtml {
  const rows = apps.map(
    (app) => html`<tr><td><a href="/developer/apps/${app.id}">${app.name}</a></td><td>${app.kind}</td>
<td><span class="badge">${app.status}</span></td><td class="secret">${app.client_id}</td></tr>`,
  );
  return portalPage(
    page,
    'Your apps',
    html`<h1>Your apps</h1>
<p><a class="button" href="/developer/apps/new">Register an app</a></p>
${
  apps.length > 0
    ? html`<div class="table-wrap"><table><thead><tr><th>Name</th><th>Kind</th><th>Status</th><th>Client id</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="muted">You have not registered an app yet.</p>`
}`,
  );
}

export interface AppFormValues {
  name?: string;
  description?: string;
  homepage_url?: string | null;
  privacy_url?: string | null;
  support_url?: string | null;
  redirect_uris?: string[];
  scopes?: string[];
  kind?: string;
  events_url?: string | null;
}

function errorList(errors: FieldError[]): SafeHtml | string {
  if (errors.length === 0) return '';
  return html`<ul class="flash error" role="alert">${errors.map((e) => html`<li>${e.path.slice(1)}: ${e.message}</li>`)}</ul>`;
}

/** The register and edit form. Kind is chosen once, at registration. */
export function appForm(
  action: string,
  csrf: string,
  values: AppFormValues,
  errors: FieldError[],
  isNew: boolean,
) {
  const scopes = values.scopes ?? [];
  const kind = values.kind ?? 'confidential';
  const url = (name: keyof AppFormValues, label: string) =>
    html`<label>${label} <input type="url" name="${name}" value="${(values[name] as string | null) ?? ''}" maxlength="2000" placeholder="https://"></label>`;
  return html`${errorList(errors)}<form class="stack" method="post" action="${action}">
${csrfField(csrf)}
<label>Name <input name="name" value="${values.name ?? ''}" required maxlength="100"></label>
<label>Description (shown when people approve) <textarea name="description" required maxlength="1000" rows="3">${values.description ?? ''}</textarea></label>
${url('homepage_url', 'Homepage')}${url('privacy_url', 'Privacy policy')}${url('support_url', 'Support')}
<label>Redirect URIs, one per line (1 to 10; https://, or http://localhost for development)
<textarea name="redirect_uris" required rows="3" maxlength="21000">${(values.redirect_uris ?? []).join('\n')}</textarea></label>
<fieldset><legend>Scopes the app may ask for</legend>${SCOPES.map(
    (scope) =>
      html`<label class="check"><input type="checkbox" name="scopes" value="${scope}"${scopes.includes(scope) ? html` checked` : ''}> ${SCOPE_DESCRIPTIONS[scope]} <span class="muted secret">${scope}</span></label>`,
  )}</fieldset>
${
  isNew
    ? html`<fieldset><legend>Kind</legend>
<label class="check"><input type="radio" name="kind" value="confidential"${kind === 'confidential' ? html` checked` : ''}> Confidential: a server app with a client secret</label>
<label class="check"><input type="radio" name="kind" value="public"${kind === 'public' ? html` checked` : ''}> Public: a mobile or single-page app, PKCE alone</label></fieldset>`
    : ''
}
${url('events_url', 'Events URL (receives app events)')}
<button type="submit">${isNew ? 'Register the app' : 'Save changes'}</button>
</form>`;
}

export function secretShownOnce(
  page: PortalPage,
  app: App,
  secrets: { label: string; value: string; name: string }[],
) {
  return portalPage(
    page,
    app.name,
    html`<h1>${app.name}</h1>
<section class="card">
<p class="flash ok" role="status">Copy ${secrets.length > 1 ? 'these secrets' : 'this secret'} now: ${
      secrets.some((s) => s.name === 'client_secret')
        ? 'the client secret is shown only once.'
        : 'keep it private.'
    }</p>
<div class="stack">${copyField('Client id', app.client_id, 'client_id')}${secrets.map((s) => copyField(s.label, s.value, s.name))}</div>
<p><a href="/developer/apps/${app.id}">Back to the app</a></p>
</section>`,
  );
}

export function appDetail(
  page: PortalPage,
  app: App,
  form: SafeHtml,
  overview: SafeHtml | '' = '',
): SafeHtml {
  return portalPage(
    page,
    app.name,
    html`<h1>${app.name} <span class="badge">${app.status}</span></h1>
${overview}
<section class="card"><h2>Credentials</h2>
<div class="stack">${copyField('Client id', app.client_id, 'client_id')}${copyField('Install link (share it with companies)', app.install_url, 'install_url')}</div>
${
  app.kind === 'confidential'
    ? html`<p><a class="button danger" href="/developer/apps/${app.id}/client-secret/rotate">Rotate the client secret</a> <span class="muted">The old secret stops working at once.</span></p>`
    : html`<p class="muted">A public app has no client secret: it relies on PKCE.</p>`
}
</section>
<section class="card"><h2>Events secret</h2>
<p><a class="button secondary" href="/developer/apps/${app.id}/events-secret">Reveal the events secret</a></p>
<p><a class="button secondary" href="/developer/apps/${app.id}/events-secret/rotate">Rotate the events secret</a> <span class="muted">The previous secret keeps signing for 24 hours.</span></p>
</section>
<section class="card"><h2>App events</h2>
<p class="muted">What was sent to your events URL (app.uninstalled, privacy requests), with each attempt; replay or send a test.</p>
<p><a class="button secondary" href="/developer/apps/${app.id}/event-messages">App event messages</a></p>
</section>
<section class="card"><h2>Configuration as code</h2>
<p class="muted">The app's manifest as <code>waybill.app.toml</code>, and its versions.</p>
<p><a class="button secondary" href="/developer/apps/${app.id}/versions">Versions</a></p>
</section>
<section class="card"><h2>App Store</h2>
<p class="muted">Submit the app for review, follow its submissions, and check your events URL.</p>
<p><a class="button secondary" href="/developer/apps/${app.id}/submissions">App Store submissions</a>
<a class="button secondary" href="/developer/apps/${app.id}/reviews">Reviews</a></p>
</section>
<section class="card"><h2>Settings</h2>
${app.status === 'published' ? html`<p class="muted">This app is published: changes to its reviewed fields go through review (<a href="/developer/apps/${app.id}/submissions/new">submit an update</a>).</p>` : ''}
${form}</section>`,
  );
}

/** The app as code: the active manifest as waybill.app.toml, and every version. */
export function appVersionsPage(page: PortalPage, app: App, versions: AppVersion[], toml: string): SafeHtml {
  const rows = versions.map(
    (
      version,
    ) => html`<tr><td>${String(version.number)}</td><td><span class="badge">${version.status}</span></td>
<td>${timeTag(version.created_at)}</td><td>${String(version.changes.length)}</td><td>${version.message ?? ''}</td></tr>`,
  );
  return portalPage(
    page,
    `${app.name}: versions`,
    html`<h1>${app.name}: configuration as code</h1>
<section class="card"><h2>waybill.app.toml</h2>
<p class="muted">The active version as a file. Save it beside your code, change it, and send it with
<code>waybill app deploy</code> (<code>--release</code> to make it active at once).</p>
<pre class="secret">${toml}</pre>
</section>
<section class="card"><h2>Versions</h2>
<table><thead><tr><th>Number</th><th>Status</th><th>Created</th><th>Changes</th><th>Message</th></tr></thead>
<tbody>${rows}</tbody></table>
<p class="muted"><code>waybill app release &lt;number&gt;</code> makes a version active; releasing an older one rolls back.</p>
<p><a href="/developer/apps/${app.id}">Back to the app</a></p>
</section>`,
  );
}

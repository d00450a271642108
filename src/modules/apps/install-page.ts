import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { layout, sendPage } from '../../web/layout.ts';
import { SCOPE_DESCRIPTIONS } from '../accounts/roles.ts';
import { listingAppUrl } from '../store/index.ts';
import { type AppRecord, findAppByClientId } from './registry.ts';

export function scopeList(scopes: AppRecord['scopes']): SafeHtml {
  return html`<ul class="scopes">${scopes.map(
    (scope) => html`<li>${SCOPE_DESCRIPTIONS[scope]} <span class="muted secret">${scope}</span></li>`,
  )}</ul>`;
}

function link(label: string, url: string | null): SafeHtml | string {
  return url ? html`<li><a href="${url}" rel="noopener noreferrer">${label}</a></li>` : '';
}

function installPage(app: AppRecord): SafeHtml {
  return layout(
    { title: `Install ${app.name}` },
    html`<section class="card narrow">
<h1>${app.name}</h1>
<p>${app.description}</p>
<ul class="links">${link('Homepage', app.homepage_url)}${link('Privacy policy', app.privacy_url)}${link('Support', app.support_url)}</ul>
<h2>What it asks for</h2>
${scopeList(app.scopes)}
<p class="flash" role="note">Installation starts from the app itself: open ${app.name} and choose to connect it to Waybill.
You will then sign in here, pick the company or merchant account, and approve.</p>
</section>`,
  );
}

function notFoundPage(): SafeHtml {
  return layout(
    { title: 'No such app' },
    html`<section class="card narrow"><h1>No such app</h1><p>This install link does not lead to an app.</p></section>`,
  );
}

/**
 * The shared install link (`install_url`): an app with a store listing sends the person on to the
 * listing's app_url, the app's own page that starts the OAuth flow; an app without one is shown
 * with a note saying where installation begins.
 */
export function installLinkPage(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { id: string } }>(
      '/apps/:id/install',
      { schema: { hide: true } },
      async (request, reply) => {
        const found = await findAppByClientId(ctx, request.params.id);
        // A suspended app cannot be authorized, so its link leads nowhere either.
        if (!found || found.status === 'suspended') return sendPage(reply, notFoundPage(), 404);
        const appUrl = await listingAppUrl(ctx, found.id);
        if (appUrl) return reply.header('cache-control', 'no-store').redirect(appUrl, 303);
        return sendPage(reply, installPage(found));
      },
    );
  };
}

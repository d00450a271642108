import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { toAppError } from '../../http/errors.ts';
import { type DashboardView, dashboardView } from '../../web/dashboard.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { sendErrorPage, showPage } from '../../web/pages/common.ts';
import { getStoreApp, listStoreApps, type StoreApp } from './catalogue.ts';
import { CATEGORIES, isCategory, type Lang } from './categories.ts';

const PATH = '/dashboard/store';

type StoreQuery = { q?: string; category?: string; lang?: string; cursor?: string };

const langOf = (value: string | undefined): Lang => (value === 'es' ? 'es' : 'en');

const WORDS = {
  en: {
    installed: 'Installed',
    install: 'Install',
    search: 'Search by name',
    all: 'All categories',
    why: 'Why',
  },
  es: {
    installed: 'Instalada',
    install: 'Instalar',
    search: 'Buscar por nombre',
    all: 'Todas las categorías',
    why: 'Por qué',
  },
} as const;

function link(label: string, url: string | null): SafeHtml | string {
  if (!url || !/^https?:\/\//i.test(url)) return '';
  return html`<li><a href="${url}" rel="noopener noreferrer" target="_blank">${label}</a></li>`;
}

function installButton(view: DashboardView, app: StoreApp): SafeHtml {
  if (!view.membership.manages_integrations) {
    return html`<p class="muted">Only owners, admins and merchant admins install apps: ask one of them.</p>`;
  }
  return html`<p><a class="button" href="${app.app_url}" target="_blank" rel="noopener noreferrer">${WORDS[app.lang].install} ${app.name}</a>
<span class="muted">Opens ${app.name}, which asks you to approve it here.</span></p>`;
}

function card(app: StoreApp, lang: Lang): SafeHtml {
  return html`<li class="card store-app">
<h2><a href="${PATH}/${app.id}?lang=${lang}">${app.name}</a> ${app.installed ? html`<span class="badge ok">${WORDS[lang].installed}</span>` : ''}</h2>
<p>${app.tagline}</p>
<p class="muted">${app.category_label}</p>
</li>`;
}

function filters(query: StoreQuery, lang: Lang): SafeHtml {
  return html`<form class="row card" method="get" action="${PATH}">
<label>${WORDS[lang].search} <input type="search" name="q" value="${query.q ?? ''}" maxlength="100"></label>
<label>Category <select name="category"><option value="">${WORDS[lang].all}</option>${CATEGORIES.map(
    (c) => html`<option value="${c.id}"${query.category === c.id ? html` selected` : ''}>${c[lang]}</option>`,
  )}</select></label>
<label>Language <select name="lang"><option value="en"${lang === 'en' ? html` selected` : ''}>English</option><option value="es"${lang === 'es' ? html` selected` : ''}>Español</option></select></label>
<button class="secondary" type="submit">Show</button>
</form>`;
}

function detail(view: DashboardView, app: StoreApp): SafeHtml {
  const other: Lang = app.lang === 'es' ? 'en' : 'es';
  return html`<p><a href="${PATH}?lang=${app.lang}">App Store</a></p>
<h1>${app.name} ${app.installed ? html`<span class="badge ok">${WORDS[app.lang].installed}</span>` : ''}</h1>
<p><strong>${app.tagline}</strong> <span class="muted">· ${app.category_label}</span>
<a href="${PATH}/${app.id}?lang=${other}" hreflang="${other}">${other === 'es' ? 'Español' : 'English'}</a></p>
<section class="card"><p class="pre" lang="${app.lang}">${app.description}</p>
<ul class="links">${link('Homepage', app.homepage_url)}${link('Privacy policy', app.privacy_url)}${link('Support', app.support_url)}</ul>
${installButton(view, app)}</section>
<section class="card"><h2>What it asks for, and why</h2>
<ul class="scopes">${app.scopes.map(
    (s) =>
      html`<li><strong>${s.description}</strong> <code>${s.scope}</code><br><span class="muted justification">${WORDS[app.lang].why}: ${s.justification}</span></li>`,
  )}</ul></section>`;
}

/** The App Store in the dashboard: published apps for the company being viewed. */
export function storePages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    // People get a page, not problem JSON, when something is refused or missing.
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const known = toAppError(error);
      if (!known || known.status >= 500) request.log.error({ err: error }, 'store page failed');
      return sendErrorPage(request, reply, known);
    });

    app.get<{ Querystring: StoreQuery }>(PATH, { schema: { hide: true } }, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      const query = request.query;
      const lang = langOf(query.lang);
      const page = await listStoreApps(ctx, view.user.userId, {
        tenant_id: view.tenantId,
        lang,
        limit: 50,
        ...(query.category && isCategory(query.category) ? { category: query.category } : {}),
        ...(query.q ? { q: query.q.slice(0, 100) } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
      const next = page.next_cursor
        ? html`<p class="pager"><a class="button secondary" rel="next" href="${PATH}?${new URLSearchParams({ ...query, cursor: page.next_cursor }).toString()}">Next</a></p>`
        : '';
      const body = html`<h1>App Store</h1>
${filters(query, lang)}
${
  page.data.length > 0
    ? html`<ul class="plain store-apps">${page.data.map((a) => card(a, lang))}</ul>${next}`
    : html`<p class="muted">No published app matches.</p>`
}`;
      return showPage(request, reply, view, { title: 'App Store', path: PATH }, body);
    });

    app.get<{ Params: { id: string }; Querystring: { lang?: string } }>(
      `${PATH}/:id`,
      { schema: { hide: true } },
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const found = await getStoreApp(ctx, view.user.userId, request.params.id.slice(0, 64), {
          tenant_id: view.tenantId,
          lang: langOf(request.query.lang),
        });
        return showPage(request, reply, view, { title: found.name, path: PATH }, detail(view, found));
      },
    );
  };
}

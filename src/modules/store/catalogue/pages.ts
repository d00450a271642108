import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.ts';
import { toAppError } from '../../../http/errors.ts';
import { AppError } from '../../../lib/errors.ts';
import { type DashboardView, dashboardView } from '../../../web/dashboard.ts';
import { html, type SafeHtml } from '../../../web/html.ts';
import { type Form, redirectWithFlash, sendErrorPage, showPage } from '../../../web/pages/common.ts';
import { confirmationBody } from '../../../web/pages/confirm.ts';
import { CATEGORIES, isCategory, type Lang } from '../listing/categories.ts';
import { TRUST_WORDS } from '../listing/words.ts';
import { icon, screenshots } from '../media/views.ts';
import { reviewEligibility } from '../ratings/eligibility.ts';
import { createReview, deleteReview, listReviews, updateReview } from '../ratings/reviews.ts';
import type { Review } from '../ratings/rows.ts';
import { reviewForm, reviewList, stars } from '../ratings/views.ts';
import { getStoreApp, listStoreApps, STORE_SORTS, type StoreApp, type StoreSort } from './queries.ts';
import { installs, ratingSummary } from './views.ts';

const PATH = '/dashboard/store';

type StoreQuery = { q?: string; category?: string; lang?: string; cursor?: string; sort?: string };

const sortOf = (value: string | undefined): StoreSort | undefined =>
  STORE_SORTS.find((sort) => sort === value);

const langOf = (value: string | undefined): Lang => (value === 'es' ? 'es' : 'en');

const WORDS = {
  en: {
    installed: 'Installed',
    install: 'Install',
    search: 'Search',
    all: 'All categories',
    why: 'Why',
  },
  es: {
    installed: 'Instalada',
    install: 'Instalar',
    search: 'Buscar',
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
<div class="store-app-head">${icon(app.icon_url, app.name, 'small')}
<h2><a href="${PATH}/${app.id}?lang=${lang}">${app.name}</a> ${app.installed ? html`<span class="badge ok">${WORDS[lang].installed}</span>` : ''}</h2></div>
<p>${app.tagline}</p>
<p>${stars(app.rating_avg, lang, app.review_count)} · ${installs(app, lang)}</p>
<p class="muted">${app.category_label}</p>
</li>`;
}

function filters(query: StoreQuery, lang: Lang): SafeHtml {
  return html`<form class="row card" method="get" action="${PATH}">
<label>${WORDS[lang].search} <input type="search" name="q" value="${query.q ?? ''}" maxlength="100"></label>
<label>Category <select name="category"><option value="">${WORDS[lang].all}</option>${CATEGORIES.map(
    (c) => html`<option value="${c.id}"${query.category === c.id ? html` selected` : ''}>${c[lang]}</option>`,
  )}</select></label>
<label>${TRUST_WORDS[lang].sort} <select name="sort"><option value="">—</option>${STORE_SORTS.map(
    (sort) =>
      html`<option value="${sort}"${query.sort === sort ? html` selected` : ''}>${TRUST_WORDS[lang].sorts[sort]}</option>`,
  )}</select></label>
<label>Language <select name="lang"><option value="en"${lang === 'en' ? html` selected` : ''}>English</option><option value="es"${lang === 'es' ? html` selected` : ''}>Español</option></select></label>
<button class="secondary" type="submit">Show</button>
</form>`;
}

interface ReviewsPart {
  reviews: Review[];
  /** The company in view may review now. */
  canReview: boolean;
}

function reviewsSection(view: DashboardView, app: StoreApp, part: ReviewsPart): SafeHtml {
  const lang = app.lang;
  return html`<section class="card" id="reviews"><h2>${TRUST_WORDS[lang].reviews}</h2>
${ratingSummary(app, lang)}
${part.canReview ? reviewForm(view.csrf, app.id, view.membership.company_name, lang) : ''}
${reviewList(part.reviews, { lang, ownActions: { csrf: view.csrf, appId: app.id, tenantId: view.tenantId } })}
</section>`;
}

function detail(view: DashboardView, app: StoreApp, part: ReviewsPart): SafeHtml {
  const other: Lang = app.lang === 'es' ? 'en' : 'es';
  return html`<p><a href="${PATH}?lang=${app.lang}">App Store</a></p>
<div class="store-app-head">${icon(app.icon_url, app.name, 'large')}
<div><h1>${app.name} ${app.installed ? html`<span class="badge ok">${WORDS[app.lang].installed}</span>` : ''}</h1>
<p>${stars(app.rating_avg, app.lang, app.review_count)} · ${installs(app, app.lang)}</p></div></div>
<p><strong>${app.tagline}</strong> <span class="muted">· ${app.category_label}</span>
<a href="${PATH}/${app.id}?lang=${other}" hreflang="${other}">${other === 'es' ? 'Español' : 'English'}</a></p>
<section class="card"><p class="pre" lang="${app.lang}">${app.description}</p>
<ul class="links">${link('Homepage', app.homepage_url)}${link('Privacy policy', app.privacy_url)}${link('Support', app.support_url)}</ul>
${installButton(view, app)}</section>
<section class="card"><h2>What it asks for, and why</h2>
<ul class="scopes">${app.scopes.map(
    (s) =>
      html`<li><strong>${s.description}</strong> <code>${s.scope}</code><br><span class="muted justification">${WORDS[app.lang].why}: ${s.justification}</span></li>`,
  )}</ul></section>
${screenshots(app.screenshots, app.name, app.lang)}
${reviewsSection(view, app, part)}`;
}

/** The form's stars; anything but 1 to 5 is 0, which the service refuses with its own message. */
function formRating(form: Form): number {
  const rating = Number(form.rating);
  return Number.isInteger(rating) && rating >= 1 && rating <= 5 ? rating : 0;
}

/** The App Store in the dashboard: published apps for the company being viewed. */
export function cataloguePages(ctx: AppContext): FastifyPluginAsync {
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
        ...(sortOf(query.sort) ? { sort: sortOf(query.sort) } : {}),
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
      return showPage(ctx, request, reply, view, { title: 'App Store', path: PATH }, body);
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
        return showPage(
          ctx,
          request,
          reply,
          view,
          { title: found.name, path: PATH },
          detail(view, found, await reviewsPart(view, found)),
        );
      },
    );

    async function reviewsPart(view: DashboardView, found: StoreApp): Promise<ReviewsPart> {
      const [page, eligibility] = await Promise.all([
        listReviews(ctx, view.user.userId, found.id, { limit: 50 }),
        reviewEligibility(ctx, view.user.userId, found.id),
      ]);
      return {
        reviews: page.data,
        canReview: eligibility.companies.some((c) => c.tenant_id === view.tenantId),
      };
    }

    const post = { schema: { hide: true }, preValidation: app.csrfProtection };

    /** A refused review comes back as the app page with the reason on top. */
    async function refusedOnPage(
      request: FastifyRequest<{ Params: { id: string } }>,
      reply: FastifyReply,
      view: DashboardView,
      error: AppError,
    ) {
      const found = await getStoreApp(ctx, view.user.userId, request.params.id.slice(0, 64), {
        tenant_id: view.tenantId,
      });
      return showPage(
        ctx,
        request,
        reply,
        view,
        { title: found.name, path: PATH, error: error.message, status: error.status },
        detail(view, found, await reviewsPart(view, found)),
      );
    }

    app.post<{ Params: { id: string }; Body: Form }>(`${PATH}/:id/reviews`, post, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      const form = request.body ?? {};
      try {
        await createReview(ctx, view.user.userId, request.params.id.slice(0, 64), {
          rating: formRating(form),
          body: typeof form.body === 'string' ? form.body : '',
          tenant_id: view.tenantId,
        });
      } catch (error) {
        if (error instanceof AppError && error.status < 500)
          return refusedOnPage(request, reply, view, error);
        throw error;
      }
      return redirectWithFlash(
        ctx,
        reply,
        `${PATH}/${request.params.id}#reviews`,
        'Thank you: your review is published.',
      );
    });

    app.post<{ Params: { id: string; review_id: string }; Body: Form }>(
      `${PATH}/:id/reviews/:review_id`,
      post,
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const form = request.body ?? {};
        try {
          await updateReview(
            ctx,
            view.user.userId,
            request.params.id.slice(0, 64),
            request.params.review_id.slice(0, 64),
            { rating: formRating(form), body: typeof form.body === 'string' ? form.body : '' },
          );
        } catch (error) {
          if (error instanceof AppError && error.status < 500)
            return refusedOnPage(request, reply, view, error);
          throw error;
        }
        return redirectWithFlash(ctx, reply, `${PATH}/${request.params.id}#reviews`, 'Your review is saved.');
      },
    );

    // The second question (CONTRACT.md, "The dashboard's manners"): a page of its own, by GET,
    // naming the review and what goes with it; it changes nothing.
    app.get<{ Params: { id: string; review_id: string }; Querystring: { lang?: string } }>(
      `${PATH}/:id/reviews/:review_id/delete`,
      { schema: { hide: true } },
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const lang = langOf(request.query.lang);
        const found = await getStoreApp(ctx, view.user.userId, request.params.id.slice(0, 64), {
          tenant_id: view.tenantId,
          lang,
        });
        const reviews = await listReviews(ctx, view.user.userId, found.id, { limit: 100 });
        const review = reviews.data.find((r) => r.id === request.params.review_id && r.mine);
        if (!review) throw new AppError('review.not_found');
        const question = `Delete ${review.company_name}'s review of ${found.name}?`;
        const body = confirmationBody(view.csrf, {
          question,
          lost: [
            `Its ${review.rating} of 5 stars and its text leave the store; ${found.name}'s rating no longer counts it.`,
            review.reply
              ? "The developer's reply to it goes too."
              : 'To review the app again, write a new review.',
          ],
          detail: html`<blockquote class="pre review-body">${review.body}</blockquote>`,
          action: `${PATH}/${encodeURIComponent(found.id)}/reviews/${encodeURIComponent(review.id)}/delete`,
          confirm: TRUST_WORDS[lang].remove,
          back: `${PATH}/${encodeURIComponent(found.id)}?lang=${lang}#reviews`,
        });
        return showPage(ctx, request, reply, view, { title: question, path: PATH }, body);
      },
    );

    app.post<{ Params: { id: string; review_id: string }; Body: Form }>(
      `${PATH}/:id/reviews/:review_id/delete`,
      post,
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        // Only the question's own form deletes; anything else is sent to the question.
        if (request.body?.confirmed !== 'yes')
          return reply.redirect(
            `${PATH}/${encodeURIComponent(request.params.id)}/reviews/${encodeURIComponent(request.params.review_id)}/delete`,
            303,
          );
        await deleteReview(
          ctx,
          view.user.userId,
          request.params.id.slice(0, 64),
          request.params.review_id.slice(0, 64),
        );
        return redirectWithFlash(
          ctx,
          reply,
          `${PATH}/${request.params.id}#reviews`,
          'The review was deleted.',
        );
      },
    );
  };
}

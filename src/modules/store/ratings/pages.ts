import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { AppContext } from '../../../context.ts';
import { AppError } from '../../../lib/errors.ts';
import { signedInPage } from '../../../web/dashboard.ts';
import { takeFlash } from '../../../web/flash.ts';
import { html } from '../../../web/html.ts';
import { sendPage } from '../../../web/layout.ts';
import type { Form } from '../../../web/pages/common.ts';
import { redirectWithFlash } from '../../../web/pages/common.ts';
import { appNotFound } from '../../apps/portal-pages.ts';
import { portalPage } from '../../apps/portal-views.ts';
import { type App, getApp } from '../../apps/service.ts';
import { developerReviews, replyToReview } from './replies.ts';
import { reviewList } from './views.ts';

type AppRoute = { Params: { id: string } };
type ReplyRoute = { Params: { id: string; review_id: string }; Body: Form };

/** The developer portal's reviews page: every review of the app, hidden ones with why, and a reply form. */
export function ratingPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const hide = { schema: { hide: true } };
    const post = { ...hide, preValidation: app.csrfProtection };

    const show = async (
      reply: FastifyReply,
      found: App,
      userId: string,
      csrf: string,
      flash: { kind: 'ok' | 'error'; message: string } | null,
      status = 200,
    ) => {
      const page = await developerReviews(ctx, userId, found.id, { limit: 100 });
      const body = html`<p><a href="/developer/apps/${found.id}">Back to the app</a></p>
<h1>Reviews of ${found.name}</h1>
<p class="muted">Companies that have used the app for 7 days review it. Answer once per review; you can edit your answer. A review a reviewer hid is shown here with the reason; the store shows it only to its company.</p>
<section class="card">${reviewList(page.data, { lang: 'en', replyForm: { csrf, appId: found.id } })}</section>`;
      return sendPage(reply, portalPage({ csrf, flash }, `Reviews · ${found.name}`, body), status);
    };

    app.get<AppRoute>(
      '/developer/apps/:id/reviews',
      hide,
      signedInPage<AppRoute>(ctx, appNotFound, async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id.slice(0, 64));
        return show(reply, found, userId, csrf, await takeFlash(ctx, request, reply));
      }),
    );

    app.post<ReplyRoute>(
      '/developer/apps/:id/reviews/:review_id/reply',
      post,
      signedInPage<ReplyRoute>(ctx, appNotFound, async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id.slice(0, 64));
        const body = request.body?.body;
        try {
          await replyToReview(ctx, userId, found.id, request.params.review_id.slice(0, 64), {
            body: typeof body === 'string' ? body : '',
          });
        } catch (error) {
          if (error instanceof AppError && error.status < 500) {
            return show(reply, found, userId, csrf, { kind: 'error', message: error.message }, error.status);
          }
          throw error;
        }
        return redirectWithFlash(
          ctx,
          reply,
          `/developer/apps/${found.id}/reviews`,
          'Your reply is published.',
        );
      }),
    );
  };
}

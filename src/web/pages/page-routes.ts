import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { type DashboardView, dashboardView } from '../dashboard.ts';
import type { ShownSecret } from '../flash.ts';
import type { SafeHtml } from '../html.ts';
import { type Form, type PageOptions, redirectWithFlash, showPage } from './common.ts';

/** What a form's action ends with: a redirect with a one-time message, or a page of its own. */
export type Done =
  | { redirect: string; message: string; secrets?: ShownSecret[]; note?: string }
  | { page: PageOptions; body: SafeHtml };

export interface FormAction<Params> {
  /** Does the work. Throwing an AppError is an expected failure: the form page comes back. */
  run(view: DashboardView, form: Form, params: Params): Promise<Done>;
  /** The page the form lives on, to show again with the reason and the fields as typed. */
  retry(
    view: DashboardView,
    form: Form,
    params: Params,
  ): Promise<{ title: string; path: string; body: SafeHtml }>;
}

/**
 * A dashboard form POST: CSRF checked once the form body is parsed (the token travels in the
 * body, which onRequest would not see yet), then run, then post-redirect-get; an expected failure
 * re-renders the form with its message and status, anything else reaches the error page.
 */
export function formPost<Params = Record<string, never>>(
  app: FastifyInstance,
  ctx: AppContext,
  url: string,
  action: FormAction<Params>,
): void {
  app.post(url, { schema: { hide: true }, preValidation: app.csrfProtection }, async (request, reply) => {
    const view = await dashboardView(ctx, request, reply);
    if (!view) return reply;
    const form = (request.body ?? {}) as Form;
    const params = request.params as Params;
    try {
      return await finish(ctx, request, reply, view, await action.run(view, form, params));
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      const again = await action.retry(view, form, params);
      const options = { title: again.title, path: again.path, status: error.status, error: error.message };
      return showPage(ctx, request, reply, view, options, again.body);
    }
  });
}

export interface PageRequestParts<Params, Query> {
  params: Params;
  query: Query;
}

/** A dashboard page: resolves the view (or redirects to sign in), renders, sends with no-store. */
export function pageGet<Params = Record<string, never>, Query = Record<string, string | undefined>>(
  app: FastifyInstance,
  ctx: AppContext,
  url: string,
  render: (
    view: DashboardView,
    request: PageRequestParts<Params, Query>,
  ) => Promise<{ title: string; path: string; body: SafeHtml }>,
): void {
  app.get(url, { schema: { hide: true } }, async (request, reply) => {
    const view = await dashboardView(ctx, request, reply);
    if (!view) return reply;
    const page = await render(view, { params: request.params as Params, query: request.query as Query });
    return showPage(ctx, request, reply, view, { title: page.title, path: page.path }, page.body);
  });
}

function finish(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  view: DashboardView,
  done: Done,
) {
  if ('redirect' in done)
    return redirectWithFlash(ctx, reply, done.redirect, done.message, {
      secrets: done.secrets ?? [],
      ...(done.note ? { note: done.note } : {}),
    });
  return showPage(ctx, request, reply, view, done.page, done.body);
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { type DashboardView, dashboardView } from '../dashboard.ts';
import { type FieldError, type FormRetry, fieldErrorsOf, typedForm } from '../fields.ts';
import { leaveFlash, type ShownSecret, takeFlash } from '../flash.ts';
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
  /**
   * The address of the form's page (a pageGet): with it, a refusal answers 303 there, the fields as
   * typed and their errors kept by the one-time flash (decision 0083), so a reload repeats no POST.
   * The page reads them from its `retry`. Without it, the refusal answers the form's page itself.
   */
  back?(params: Params): string;
  /** The refusal's errors beside their fields, in the form's words (fieldErrorsOf by default). */
  fieldErrors?(error: AppError): FieldError[];
  /** The banner's words when the errors stand beside their fields. */
  refused?: string;
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
      // Refused or missing: the error page, as for any page (a form of nothing has no page to go back to).
      if (action.back && error.status !== 403 && error.status !== 404) {
        const errors = action.fieldErrors?.(error) ?? fieldErrorsOf(error);
        const path = action.back(params);
        await leaveFlash(ctx, reply, {
          kind: 'error',
          message: errors.length
            ? (action.refused ?? `${error.message}: see the form below.`)
            : error.message,
          form: { path, values: typedForm(form), errors },
        });
        return reply.redirect(path, 303);
      }
      const again = await action.retry(view, form, params);
      const options = { title: again.title, path: again.path, status: error.status, error: error.message };
      return showPage(ctx, request, reply, view, options, again.body);
    }
  });
}

export interface PageRequestParts<Params, Query> {
  params: Params;
  query: Query;
  /** After a refused form of this page (FormAction.back): the fields as typed and their errors. */
  retry: FormRetry | null;
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
    const flash = await takeFlash(ctx, request, reply);
    const here = request.url.split('?')[0];
    const retry = flash?.form && flash.form.path === here ? flash.form : null;
    const page = await render(view, {
      params: request.params as Params,
      query: request.query as Query,
      retry,
    });
    const options = { title: page.title, path: page.path, flash };
    return showPage(ctx, request, reply, view, options, page.body);
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

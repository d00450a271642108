import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteGenericInterface } from 'fastify';
import type { AppContext } from '../../../context.ts';
import { AppError, type FieldError } from '../../../lib/errors.ts';
import { signedInPage } from '../../../web/dashboard.ts';
import { sendPage } from '../../../web/layout.ts';
import { confirmationBody } from '../../../web/pages/confirm.ts';
import { isScope, SCOPES } from '../../accounts/roles.ts';
import { appNotFound } from '../../apps/portal-pages.ts';
import { portalPage } from '../../apps/portal-views.ts';
import { type App, getApp } from '../../apps/service.ts';
import type { Check } from '../checks/check.ts';
import { unpublishApp } from '../publication/service.ts';
import { checkRunsRateLimit } from './rate-limits.ts';
import {
  checkBeforeSubmitting,
  createSubmission,
  listSubmissions,
  type ProposedAppValues,
  type SubmissionInput,
  withdrawSubmission,
} from './service.ts';
import { formDefaults, type SubmissionFormValues, submissionForm, submissionHistory } from './views.ts';

const script = readFileSync(new URL('../../../web/static/submission-form.js', import.meta.url), 'utf8');

type Form = Record<string, string | string[] | undefined>;
type AppRoute = { Params: { id: string }; Body: Form; Querystring: { done?: string } };
type SubmissionRoute = { Params: { id: string; sub_id: string }; Body: Form };

const one = (value: Form[string], max = 4000): string =>
  (Array.isArray(value) ? (value[0] ?? '') : (value ?? '')).slice(0, max * 2);

function formValues(form: Form): SubmissionFormValues {
  const scopes = (Array.isArray(form.scopes) ? form.scopes : form.scopes ? [form.scopes] : []).slice(0, 20);
  return {
    name: one(form.name, 100),
    description: one(form.description, 1000),
    homepage_url: one(form.homepage_url).trim(),
    privacy_url: one(form.privacy_url).trim(),
    support_url: one(form.support_url).trim(),
    redirect_uris: one(form.redirect_uris, 21000)
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter(Boolean)
      .slice(0, 50),
    scopes,
    events_url: one(form.events_url).trim(),
    tagline: one(form.tagline, 120),
    category: one(form.category, 64),
    app_url: one(form.app_url).trim(),
    description_en: one(form.description_en),
    description_es: one(form.description_es),
    justifications: Object.fromEntries(
      SCOPES.map((scope) => [scope, one(form[`justification_${scope}`], 300)]),
    ),
    note: one(form.note, 2000),
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The form to the API's input: the listing with the justifications of the ticked scopes, and as
 * proposed values only what differs from the live app.
 */
function toSubmission(app: App, values: SubmissionFormValues): SubmissionInput {
  const proposed: ProposedAppValues = {};
  const link = (value: string) => value || null;
  if (values.name.trim() !== app.name) proposed.name = values.name;
  if (values.description.trim() !== app.description) proposed.description = values.description;
  for (const field of ['homepage_url', 'privacy_url', 'support_url'] as const) {
    if (link(values[field]) !== app[field]) proposed[field] = link(values[field]);
  }
  if (!same(values.redirect_uris, app.redirect_uris)) proposed.redirect_uris = values.redirect_uris;
  const scopes = SCOPES.filter((scope) => values.scopes.includes(scope));
  const unknown = values.scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0 || !same(scopes, app.scopes)) proposed.scopes = values.scopes;
  return {
    listing: {
      tagline: values.tagline,
      description_en: values.description_en,
      description_es: values.description_es,
      category: values.category,
      app_url: values.app_url,
      scope_justifications: scopes.map((scope) => ({
        scope,
        justification: values.justifications[scope] ?? '',
      })),
    },
    note: values.note || null,
    ...(Object.keys(proposed).length > 0 ? { app: proposed } : {}),
    ...(link(values.events_url) !== app.events_url ? { events_url: link(values.events_url) } : {}),
  };
}

function fieldErrors(error: AppError): FieldError[] {
  const errors = error.extra.errors as FieldError[] | undefined;
  return errors && errors.length > 0 ? errors : [{ path: '/submission', message: error.message }];
}

/** The developer portal's App Store pages: submit, history, withdraw, check the events URL, unpublish. */
export function submissionPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const hide = { schema: { hide: true } };
    const post = { ...hide, preValidation: app.csrfProtection };

    app.get('/static/submission-form.js', hide, async (_request, reply) =>
      reply
        .type('text/javascript; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .send(script),
    );

    /** A page of the signed-in person's app; another person's app is a 404 page. */
    const page = <R extends RouteGenericInterface & { Params: { id: string } }>(
      handler: (
        found: App,
        userId: string,
        csrf: string,
        request: FastifyRequest<R>,
        reply: FastifyReply,
      ) => Promise<unknown>,
    ) =>
      signedInPage<R>(ctx, appNotFound, async (userId, csrf, request, reply) =>
        handler(
          await getApp(ctx, userId, (request.params as { id: string }).id),
          userId,
          csrf,
          request,
          reply,
        ),
      );

    const FLASHES: Record<string, string> = {
      submitted: 'Submitted for review. The automated checks ran; their results are below.',
      withdrawn: 'The submission was withdrawn. The app stays as it was.',
      unpublished: 'The app is private now: off the store. Companies that installed it keep it.',
    };

    const history = async (
      reply: FastifyReply,
      found: App,
      userId: string,
      csrf: string,
      options: {
        flash?: { kind: 'ok' | 'error'; message: string } | null;
        checks?: Check[];
        status?: number;
      },
    ) => {
      const submissions = await listSubmissions(ctx, userId, found.id, { limit: 100 });
      const body = submissionHistory(
        { csrf, flash: options.flash ?? null },
        found,
        submissions.data,
        options.checks ?? null,
      );
      return sendPage(reply, body, options.status ?? 200);
    };

    app.get<AppRoute>(
      '/developer/apps/:id/submissions',
      hide,
      page<AppRoute>(async (found, userId, csrf, request, reply) => {
        const message = FLASHES[request.query.done ?? ''];
        return history(reply, found, userId, csrf, { flash: message ? { kind: 'ok', message } : null });
      }),
    );

    app.get<AppRoute>(
      '/developer/apps/:id/submissions/new',
      hide,
      page<AppRoute>(async (found, userId, csrf, _request, reply) => {
        const last = (await listSubmissions(ctx, userId, found.id, { limit: 1 })).data[0];
        return sendPage(
          reply,
          submissionForm({ csrf }, found, formDefaults(found, last?.listing ?? null), []),
        );
      }),
    );

    app.post<AppRoute>(
      '/developer/apps/:id/submissions',
      post,
      page<AppRoute>(async (found, userId, csrf, request, reply) => {
        const values = formValues(request.body ?? {});
        try {
          await createSubmission(ctx, userId, found.id, toSubmission(found, values));
          return reply.redirect(`/developer/apps/${found.id}/submissions?done=submitted`, 303);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          return sendPage(reply, submissionForm({ csrf }, found, values, fieldErrors(error)), error.status);
        }
      }),
    );

    app.post<SubmissionRoute>(
      '/developer/apps/:id/submissions/:sub_id/withdraw',
      post,
      page<SubmissionRoute>(async (found, userId, csrf, request, reply) => {
        try {
          await withdrawSubmission(ctx, userId, found.id, request.params.sub_id);
          return reply.redirect(`/developer/apps/${found.id}/submissions?done=withdrawn`, 303);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          const flash = { kind: 'error' as const, message: error.message };
          return history(reply, found, userId, csrf, { flash, status: error.status });
        }
      }),
    );

    app.post<AppRoute>(
      '/developer/apps/:id/events-url-checks',
      { ...post, config: { rateLimit: checkRunsRateLimit } },
      page<AppRoute>(async (found, userId, csrf, _request, reply) => {
        const { checks } = await checkBeforeSubmitting(ctx, userId, found.id, {});
        const passed = checks.slice(0, 2).every((check) => check.passed);
        const flash = passed
          ? { kind: 'ok' as const, message: 'Your events URL passed both message checks.' }
          : { kind: 'error' as const, message: 'Your events URL failed a check: see the results below.' };
        return history(reply, found, userId, csrf, { flash, checks });
      }),
    );

    app.get<AppRoute>(
      '/developer/apps/:id/unpublish',
      hide,
      page<AppRoute>(async (found, _userId, csrf, _request, reply) => {
        const question = `Unpublish ${found.name}?`;
        const body = confirmationBody(csrf, {
          question,
          lost: [
            'It leaves the App Store at once: no company finds or installs it any more.',
            'Companies that installed it keep it, and it keeps working for them.',
            'Coming back needs a new submission and a review.',
          ],
          action: `/developer/apps/${found.id}/unpublish`,
          confirm: 'Unpublish',
          back: `/developer/apps/${found.id}/submissions`,
        });
        return sendPage(reply, portalPage({ csrf }, question, body));
      }),
    );

    app.post<AppRoute>(
      '/developer/apps/:id/unpublish',
      post,
      page<AppRoute>(async (found, userId, csrf, request, reply) => {
        if ((request.body as Record<string, unknown> | undefined)?.confirmed !== 'yes')
          return reply.redirect(`/developer/apps/${found.id}/unpublish`, 303);
        try {
          await unpublishApp(ctx, userId, found.id);
          return reply.redirect(`/developer/apps/${found.id}/submissions?done=unpublished`, 303);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          const flash = { kind: 'error' as const, message: error.message };
          return history(reply, found, userId, csrf, { flash, status: error.status });
        }
      }),
    );
  };
}

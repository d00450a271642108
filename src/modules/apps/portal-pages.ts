import type { FastifyPluginAsync, FastifyReply, RouteGenericInterface } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError, type FieldError } from '../../lib/errors.ts';
import { type PageHandler, signedInPage } from '../../web/dashboard.ts';
import { type Flash, takeFlash } from '../../web/flash.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { sendPage } from '../../web/layout.ts';
import { redirectWithFlash } from '../../web/pages/common.ts';
import { confirmationBody } from '../../web/pages/confirm.ts';
import { appOverview } from '../console/pages.ts';
import { manifestToml } from './manifest.ts';
import {
  type AppFormValues,
  appDetail,
  appForm,
  appList,
  appVersionsPage,
  portalPage,
  secretShownOnce,
} from './portal-views.ts';
import { revealEventsSecret, rotateClientSecret, rotateEventsSecret } from './secrets.ts';
import { type App, createApp, getApp, listApps, type NewApp, updateApp } from './service.ts';
import { listVersions } from './versions.ts';

type Form = Record<string, string | string[] | undefined>;
type AppRoute = { Params: { id: string }; Body: Form; Querystring: { saved?: string } };

const text = (value: Form[string], max = 2000): string =>
  (Array.isArray(value) ? (value[0] ?? '') : (value ?? '')).trim().slice(0, max * 2);
const list = (value: Form[string]): string[] => (Array.isArray(value) ? value : value ? [value] : []);

/** Form fields to the developer API's input: the same service checks answer both. */
function formValues(form: Form): AppFormValues & { name: string; description: string } {
  return {
    name: text(form.name, 100),
    description: text(form.description, 1000),
    homepage_url: text(form.homepage_url) || null,
    privacy_url: text(form.privacy_url) || null,
    support_url: text(form.support_url) || null,
    redirect_uris: text(form.redirect_uris, 21000)
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter(Boolean)
      .slice(0, 50),
    scopes: list(form.scopes).slice(0, 20),
    events_url: text(form.events_url) || null,
    kind: text(form.kind, 20),
  };
}

function fieldErrors(error: AppError): FieldError[] {
  const errors = error.extra.errors as FieldError[] | undefined;
  return errors && errors.length > 0 ? errors : [{ path: '/app', message: error.message }];
}

/** The page for an app that is not the signed-in person's (or does not exist); other errors go on. */
export function appNotFound(error: AppError, csrf: string, reply: FastifyReply) {
  if (error.code !== 'app.not_found') return undefined;
  return sendPage(reply, portalPage({ csrf }, 'No such app', html`<h1>No such app</h1>`), 404);
}

/** The developer portal: list, register, edit, secrets and the install link of a person's apps. */
export function portalPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const hide = { schema: { hide: true } };
    const post = { ...hide, preValidation: app.csrfProtection };

    /** Runs a page for the signed-in person; an app that is not theirs is a 404 page. */
    const page = <R extends RouteGenericInterface>(handler: PageHandler<R>) =>
      signedInPage<R>(ctx, appNotFound, handler);

    const showDetail = (
      reply: FastifyReply,
      csrf: string,
      found: App,
      errors: FieldError[] = [],
      values?: AppFormValues,
      flash?: Flash | null,
      overview: SafeHtml | '' = '',
    ) =>
      sendPage(
        reply,
        appDetail(
          { csrf, flash: flash ?? null },
          found,
          appForm(`/developer/apps/${found.id}`, csrf, values ?? found, errors, false),
          overview,
        ),
        errors.length > 0 ? 400 : 200,
      );

    app.get(
      '/developer/apps',
      hide,
      page(async (userId, csrf, _request, reply) => {
        const apps = await listApps(ctx, userId, { limit: 100 });
        return sendPage(reply, appList({ csrf }, apps.data));
      }),
    );

    app.get(
      '/developer/apps/new',
      hide,
      page(async (_userId, csrf, _request, reply) =>
        sendPage(
          reply,
          portalPage(
            { csrf },
            'Register an app',
            html`<h1>Register an app</h1>${appForm('/developer/apps', csrf, {}, [], true)}`,
          ),
        ),
      ),
    );

    app.post<{ Body: Form }>(
      '/developer/apps',
      post,
      page<{ Body: Form }>(async (userId, csrf, request, reply) => {
        const values = formValues(request.body ?? {});
        try {
          if (values.kind !== 'confidential' && values.kind !== 'public') {
            throw new AppError('validation.failed', 'Choose a kind', {
              errors: [{ path: '/kind', message: 'choose confidential or public' }],
            });
          }
          const created = await createApp(ctx, userId, values as NewApp);
          const secrets = [{ label: 'Events secret', value: created.events_secret, name: 'events_secret' }];
          if (created.client_secret)
            secrets.unshift({
              label: 'Client secret (shown once)',
              value: created.client_secret,
              name: 'client_secret',
            });
          return redirectWithFlash(
            ctx,
            reply,
            `/developer/apps/${created.id}`,
            `${created.name} is registered.`,
            {
              secrets,
              note: 'Keep them in your app now: the client secret is shown only once.',
            },
          );
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          const body = html`<h1>Register an app</h1>${appForm('/developer/apps', csrf, values, fieldErrors(error), true)}`;
          return sendPage(reply, portalPage({ csrf }, 'Register an app', body), error.status);
        }
      }),
    );

    app.get<AppRoute>(
      '/developer/apps/:id',
      hide,
      page<AppRoute>(async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id);
        const overview = await appOverview(ctx, userId, found.id);
        const flash = await takeFlash(ctx, request, reply);
        return showDetail(reply, csrf, found, [], undefined, flash, overview);
      }),
    );

    app.post<AppRoute>(
      '/developer/apps/:id',
      post,
      page<AppRoute>(async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id);
        const { kind: _kind, ...values } = formValues(request.body ?? {});
        try {
          await updateApp(ctx, userId, found.id, values);
          return redirectWithFlash(ctx, reply, `/developer/apps/${found.id}`, 'Saved.');
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          return showDetail(reply, csrf, found, fieldErrors(error), values);
        }
      }),
    );

    /** Rotating a secret asks once more, on a page that changes nothing. */
    const rotations = {
      'client-secret': (found: App) => ({
        question: `Rotate the client secret of ${found.name}?`,
        lost: [
          'The current client secret stops working at once: token requests with it are refused.',
          'The new one is shown once; put it in your app right away.',
        ],
      }),
      'events-secret': (found: App) => ({
        question: `Rotate the events secret of ${found.name}?`,
        lost: [
          'Messages to your events URL are signed with the new secret from now on.',
          'The previous secret keeps signing too for 24 hours: update your receiver before then.',
        ],
      }),
    };
    for (const [secret, question] of Object.entries(rotations)) {
      app.get<AppRoute>(
        `/developer/apps/:id/${secret}/rotate`,
        hide,
        page<AppRoute>(async (userId, csrf, request, reply) => {
          const found = await getApp(ctx, userId, request.params.id);
          const asked = question(found);
          const body = confirmationBody(csrf, {
            ...asked,
            action: `/developer/apps/${found.id}/${secret}/rotate`,
            confirm: 'Rotate secret',
            back: `/developer/apps/${found.id}`,
          });
          return sendPage(reply, portalPage({ csrf }, asked.question, body));
        }),
      );
    }
    const unconfirmed = (body: Form | undefined) => body?.confirmed !== 'yes';

    app.post<AppRoute>(
      '/developer/apps/:id/client-secret/rotate',
      post,
      page<AppRoute>(async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id);
        if (unconfirmed(request.body))
          return reply.redirect(`/developer/apps/${found.id}/client-secret/rotate`, 303);
        if (found.kind !== 'confidential')
          return showDetail(reply, csrf, found, [
            { path: '/kind', message: 'a public app has no client secret' },
          ]);
        const { client_secret } = await rotateClientSecret(ctx, userId, found.id);
        return redirectWithFlash(ctx, reply, `/developer/apps/${found.id}`, 'Client secret rotated.', {
          secrets: [{ label: 'New client secret', value: client_secret, name: 'client_secret' }],
          note: 'It is shown only once; the previous one no longer works.',
        });
      }),
    );

    app.get<AppRoute>(
      '/developer/apps/:id/events-secret',
      hide,
      page<AppRoute>(async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id);
        const { secret } = await revealEventsSecret(ctx, userId, found.id);
        return sendPage(
          reply,
          secretShownOnce({ csrf }, found, [
            { label: 'Events secret', value: secret, name: 'events_secret' },
          ]),
        );
      }),
    );

    app.get<AppRoute>(
      '/developer/apps/:id/versions',
      hide,
      page<AppRoute>(async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id);
        const versions = await listVersions(ctx, userId, found.id, { limit: 100 });
        const active = versions.data.find((version) => version.status === 'active');
        const toml = active ? manifestToml(found.id, active.manifest) : '';
        return sendPage(reply, appVersionsPage({ csrf }, found, versions.data, toml));
      }),
    );

    app.post<AppRoute>(
      '/developer/apps/:id/events-secret/rotate',
      post,
      page<AppRoute>(async (userId, _csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id);
        if (unconfirmed(request.body))
          return reply.redirect(`/developer/apps/${found.id}/events-secret/rotate`, 303);
        const { secret } = await rotateEventsSecret(ctx, userId, found.id);
        return redirectWithFlash(ctx, reply, `/developer/apps/${found.id}`, 'Events secret rotated.', {
          secrets: [{ label: 'New events secret', value: secret, name: 'events_secret' }],
          note: 'You can reveal it again on this page.',
        });
      }),
    );
  };
}

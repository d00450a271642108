import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { maskedBrokerUrl } from '../../delivery/destinations/spec.ts';
import { AppError, type FieldError } from '../../lib/errors.ts';
import { type DashboardView, dashboardPage, dashboardView, storeView } from '../../web/dashboard.ts';
import { type FieldError as FormFieldError, fieldErrorsOf, typedForm } from '../../web/fields.ts';
import { type Flash, leaveFlash, type ShownSecret, takeFlash } from '../../web/flash.ts';
import { html } from '../../web/html.ts';
import { sendPage } from '../../web/layout.ts';
import { redirectWithFlash } from '../../web/pages/common.ts';
import { type Confirmation, confirmationBody } from '../../web/pages/confirm.ts';
import { attemptAnswer } from './attempt-words.ts';
import { DELIVERY_STATUSES, type DeliveryStatus, getDelivery, listDeliveries } from './deliveries.ts';
import { createEndpoint } from './endpoint-create.ts';
import { revealSecret, rotateSecret } from './endpoint-secrets.ts';
import { updateEndpoint } from './endpoint-update.ts';
import { type DeliveryControlsInput, getEndpoint, listEndpoints, type WebhookEndpoint } from './endpoints.ts';
import { ENDPOINT_ACTIONS } from './pages-actions.ts';
import {
  deliveryPage,
  type EndpointForm,
  type EndpointPageExtras,
  endpointList,
  endpointPage,
  newEndpointForm,
} from './pages-views.ts';
import { replayDelivery } from './replay.ts';
import { endpointStats, endpointsHealth, STATS_WINDOWS } from './stats.ts';
import { sendTestMessage, type TestSendResult } from './test-send.ts';

/** Where an action's answer is shown, what it says, and a secret to show once. */
interface Answer {
  to: string;
  message: string;
  secrets?: ShownSecret[];
  note?: string;
}

function testSummary(result: TestSendResult): string {
  const answer =
    result.status_code === null && result.error !== null
      ? `no answer, ${attemptAnswer(result)}`
      : attemptAnswer(result);
  return `Test message sent: ${answer} in ${result.duration_ms} ms.`;
}

type Form = Record<string, string | string[] | undefined>;
type Query = { status?: string; cursor?: string; done?: string; window?: string };
const LIST = '/dashboard/webhooks';
const hidden = { schema: { hide: true } };

function text(form: Form, name: string): string {
  const value = form[name];
  return (Array.isArray(value) ? value[0] : value)?.slice(0, 2048) ?? '';
}

function list(form: Form, name: string): string[] {
  const value = form[name];
  return (Array.isArray(value) ? value : value === undefined ? [] : [value]).slice(0, 20);
}

/** The controls form: empty rate limit is none; header rows with neither name nor value are left out. */
function controlsOf(form: Form): DeliveryControlsInput {
  const rate = text(form, 'rate_limit').trim();
  const names = list(form, 'header_name');
  const values = list(form, 'header_value');
  const headers: Record<string, string> = {};
  names.forEach((name, i) => {
    const value = values[i] ?? '';
    if (name.trim() !== '' || value !== '') headers[name.trim()] = value;
  });
  return {
    rate_limit: rate === '' ? null : /^\d{1,6}$/.test(rate) ? Number(rate) : Number.NaN,
    ordering: text(form, 'ordering') as DeliveryControlsInput['ordering'],
    headers,
  };
}

function statusFilter(value: string | undefined): DeliveryStatus | undefined {
  return DELIVERY_STATUSES.find((s) => s === value);
}

/** The add-an-endpoint form as typed (a posted body, or the values a refusal kept). */
function endpointFormOf(body: Form, viewLive: boolean): EndpointForm {
  return {
    url: text(body, 'url'),
    kind: text(body, 'destination_type') || 'https',
    exchange: text(body, 'exchange'),
    routing_key: text(body, 'routing_key'),
    subject: text(body, 'subject'),
    description: text(body, 'description').slice(0, 500),
    event_types: list(body, 'event_types'),
    livemode: text(body, 'mode') === 'test' ? false : text(body, 'mode') === 'live' ? true : viewLive,
  };
}

/** The endpoint form's fields as a person reads them, for errors beside them. */
const ENDPOINT_LABELS = {
  url: 'URL',
  exchange: 'Exchange',
  routing_key: 'Routing key',
  subject: 'Subject',
  description: 'Description',
  event_types: 'Events',
};

/** The delivery controls' fields as a person reads them. */
const CONTROLS_LABELS = { rate_limit: 'Rate limit', ordering: 'Order' };

/**
 * The controls form's errors beside their fields: a header's error ("/headers/webhook-id") beside
 * the custom headers, naming the header, never the API's path.
 */
function controlsErrors(error: AppError): FormFieldError[] {
  const listed = Array.isArray(error.extra.errors) ? (error.extra.errors as FieldError[]) : [];
  const headers = listed
    .filter((item) => item.path === '/headers' || item.path.startsWith('/headers/'))
    .map((item) => {
      const name = item.path.slice('/headers/'.length);
      return name ? `The header ${name} ${item.message}` : `Custom headers: ${item.message}`;
    });
  const others = fieldErrorsOf(
    new AppError(error.code, error.message, {
      ...error.extra,
      errors: listed.filter((item) => !item.path.startsWith('/headers')),
    }),
    { labels: CONTROLS_LABELS },
  );
  return headers.length ? [...others, { field: 'headers', message: `${headers.join('; ')}.` }] : others;
}

/** Why a refusal happened, in words: the service's sentence and each field's, without API paths. */
function refusalWords(error: AppError): string {
  const fields = Array.isArray(error.extra.errors) ? (error.extra.errors as FieldError[]) : [];
  const details = fields
    .map((field) => {
      const name = field.path
        .split('/')
        .filter((part) => part !== '' && !/^\d+$/.test(part))
        .pop();
      return name ? `${name.replace(/_/g, ' ')} ${field.message}` : field.message;
    })
    .join('; ');
  return details ? `${error.message}: ${details}.` : `${error.message}.`;
}

/** An expected failure shown on the page; anything else is a bug for the error handler. */
function flashOf(error: unknown): { kind: 'error'; message: string; status: number } {
  if (!(error instanceof AppError)) throw error;
  return { kind: 'error', message: refusalWords(error), status: error.status };
}

/** What a refused action on an endpoint says on top of the page it returns to. */
const REFUSED: Record<string, string> = {
  disable: 'The endpoint was not disabled',
  'enable-and-replay': 'The endpoint was not enabled',
  test: 'No test message was sent',
  secret: 'The secret was not shown',
  'rotate-secret': 'The secret was not rotated',
  delete: 'The endpoint was not deleted',
  replay: 'Not replayed',
  controls: 'The delivery controls were not saved',
};

/** The dashboard's webhook pages (CSRF on every form; the services decide what the person may do). */
export function webhookPages(ctx: AppContext): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    // preValidation, not onRequest: the form's _csrf field is only readable once the body is parsed.
    const guarded = { ...hidden, preValidation: app.csrfProtection };

    async function renderEndpoint(
      view: DashboardView,
      request: FastifyRequest,
      reply: FastifyReply,
      id: string,
      query: Query,
      extras: EndpointPageExtras & { flash?: Flash | null },
      status = 200,
    ) {
      const endpoint = await getEndpoint(ctx, view.access, id);
      const filter = statusFilter(query.status);
      const deliveries = await listDeliveries(ctx, view.access, id, {
        limit: 20,
        ...(filter ? { status: filter } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
      const window = STATS_WINDOWS.find((w) => w === query.window) ?? '24h';
      const stats = await endpointStats(ctx, view.access, id, window);
      const flash = extras.flash ?? (await takeFlash(ctx, request, reply));
      // After a refused controls form (303 here): the form as typed, each error beside its field.
      const here = `${LIST}/${endpoint.id}`;
      const retry = flash?.form?.path === here ? flash.form : null;
      const body = endpointPage(
        view.csrf,
        endpoint,
        deliveries,
        filter,
        { ...extras, retry },
        {
          stats,
          now: ctx.clock.now(),
        },
      );
      return sendPage(
        reply,
        dashboardPage(view, { title: 'Webhook endpoint', path: LIST, flash }, body),
        status,
      );
    }

    function notFound(view: DashboardView, reply: FastifyReply, error: unknown) {
      const { message, status } = flashOf(error);
      const body = html`<h1>Not found</h1><p>${message}</p><p><a href="${LIST}">Back to webhooks</a></p>`;
      return sendPage(reply, dashboardPage(view, { title: 'Not found', path: LIST }, body), status);
    }

    /**
     * A refused POST on an endpoint or delivery: 303 back to its page with a flash saying why (a
     * reload repeats nothing); one that is gone (or never visible) back to the list.
     */
    async function refused(reply: FastifyReply, error: unknown, action: string, page: string) {
      if (!(error instanceof AppError)) throw error;
      const to = error.status === 404 ? LIST : page;
      await leaveFlash(ctx, reply, {
        kind: 'error',
        message: `${REFUSED[action] ?? 'Not done'}. ${refusalWords(error)}`,
      });
      return reply.redirect(to, 303);
    }

    app.get<{ Querystring: Query }>(LIST, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      try {
        const page = await listEndpoints(ctx, view.access, { limit: 20, cursor: request.query.cursor });
        const health = await endpointsHealth(
          ctx,
          page.data.map((endpoint) => endpoint.id),
          '24h',
        );
        const body = endpointList(page, view.livemode, health, ctx.clock.now());
        const flash = await takeFlash(ctx, request, reply);
        return sendPage(reply, dashboardPage(view, { title: 'Webhooks', path: LIST, flash }, body));
      } catch (error) {
        return notFound(view, reply, error);
      }
    });

    app.get(`${LIST}/new`, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      // After a refusal (303 here): the form as typed, each error beside its field.
      const flash = await takeFlash(ctx, request, reply);
      const retry = flash?.form?.path === `${LIST}/new` ? flash.form : null;
      const form = retry
        ? endpointFormOf(retry.values, view.livemode)
        : { url: '', description: '', event_types: [], livemode: view.livemode };
      const body = newEndpointForm(view.csrf, form, retry?.errors ?? []);
      return sendPage(reply, dashboardPage(view, { title: 'Add an endpoint', path: LIST, flash }, body));
    });

    app.post<{ Body: Form }>(LIST, guarded, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      const form = endpointFormOf(request.body ?? {}, view.livemode);
      // The creator chooses live or test; the view follows, so the new endpoint is on screen.
      const access = { ...view.access, livemode: form.livemode };
      try {
        const created = await createEndpoint(ctx, access, {
          ...(form.kind === 'https'
            ? { url: form.url }
            : {
                destination: {
                  type: form.kind,
                  url: form.url,
                  ...(form.kind === 'rabbitmq'
                    ? { exchange: form.exchange, routing_key: form.routing_key }
                    : { subject: form.subject }),
                },
              }),
          event_types: form.event_types,
          description: form.description,
        });
        storeView(ctx, reply, {
          tenantId: view.tenantId,
          customerAccountId: view.customerAccountId,
          livemode: form.livemode,
        });
        return redirectWithFlash(ctx, reply, `${LIST}/${created.id}`, 'Endpoint added.', {
          secrets: [{ label: 'Signing secret', value: created.secret }],
          note: 'Keep it in your receiver; you can reveal it here again.',
        });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        // Back to the form (303: a reload repeats no POST), as typed, each error beside its field.
        // A broker URL's password is never kept: the form comes back with it masked.
        const shown = form.kind === 'https' ? form : { ...form, url: maskedBrokerUrl(form.url) };
        const errors = fieldErrorsOf(error, { labels: ENDPOINT_LABELS });
        await leaveFlash(ctx, reply, {
          kind: 'error',
          message: errors.length ? 'The endpoint was not added: see the form below.' : flashOf(error).message,
          form: {
            path: `${LIST}/new`,
            values: {
              url: shown.url,
              destination_type: shown.kind ?? 'https',
              exchange: shown.exchange ?? '',
              routing_key: shown.routing_key ?? '',
              subject: shown.subject ?? '',
              description: shown.description,
              event_types: shown.event_types,
              mode: shown.livemode ? 'live' : 'test',
            },
            errors,
          },
        });
        return reply.redirect(`${LIST}/new`, 303);
      }
    });

    app.get<{ Params: { id: string }; Querystring: Query }>(`${LIST}/:id`, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      try {
        return await renderEndpoint(view, request, reply, request.params.id, request.query, {});
      } catch (error) {
        return notFound(view, reply, error);
      }
    });

    /** Actions whose answer is shown once: a secret on the endpoint page, a test's on its message. */
    const showOnce: Array<[string, (view: DashboardView, id: string) => Promise<Answer>]> = [
      [
        'secret',
        async (v, id) => ({
          to: `${LIST}/${id}`,
          message: 'The signing secret, shown at your request.',
          secrets: [{ label: 'Signing secret', value: (await revealSecret(ctx, v.access, id)).secret }],
          note: 'Shown once on this page; reveal it again whenever you need.',
        }),
      ],
      [
        'rotate-secret',
        async (v, id) => ({
          to: `${LIST}/${id}`,
          message: 'Secret rotated.',
          secrets: [{ label: 'New signing secret', value: (await rotateSecret(ctx, v.access, id)).secret }],
          note: 'The previous one keeps signing too for 24 hours.',
        }),
      ],
      [
        'test',
        async (v, id) => {
          const result = await sendTestMessage(ctx, v.access, id, {});
          return { to: `${LIST}/deliveries/${result.delivery_id}`, message: testSummary(result) };
        },
      ],
    ];
    for (const [action, run] of showOnce) {
      app.post<{ Params: { id: string } }>(`${LIST}/:id/${action}`, guarded, async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const id = request.params.id;
        if (unconfirmed(action, request.body))
          return reply.redirect(`${LIST}/${encodeURIComponent(id)}/${action}`, 303);
        try {
          const answer = await run(view, id);
          return redirectWithFlash(ctx, reply, answer.to, answer.message, {
            secrets: answer.secrets ?? [],
            ...(answer.note ? { note: answer.note } : {}),
          });
        } catch (error) {
          return refused(reply, error, action, `${LIST}/${encodeURIComponent(id)}`);
        }
      });
    }

    app.post<{ Params: { id: string }; Body: Form }>(
      `${LIST}/:id/controls`,
      guarded,
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const id = request.params.id;
        const here = `${LIST}/${encodeURIComponent(id)}`;
        try {
          await updateEndpoint(ctx, view.access, id, controlsOf(request.body ?? {}));
          return redirectWithFlash(ctx, reply, here, 'Delivery controls saved.');
        } catch (error) {
          if (!(error instanceof AppError) || error.status === 404)
            return refused(reply, error, 'controls', here);
          // Back to the form (303: a reload repeats no POST), as typed, each error beside its field.
          const errors = controlsErrors(error);
          const values = typedForm(request.body ?? {});
          await leaveFlash(ctx, reply, {
            kind: 'error',
            message: errors.length
              ? 'The delivery controls were not saved: see the form below.'
              : `The delivery controls were not saved. ${refusalWords(error)}`,
            form: { path: here, values, errors },
          });
          return reply.redirect(here, 303);
        }
      },
    );

    /** The second question of the actions that lose something: a page that changes nothing. */
    const CONFIRMED: Record<string, (endpoint: WebhookEndpoint) => Confirmation> = {
      delete: (endpoint) => ({
        question: `Delete the endpoint ${endpoint.description ?? endpoint.url}?`,
        lost: [
          `Messages stop going to ${endpoint.url}; those waiting are cancelled.`,
          'Its delivery history, its statistics and its signing secret.',
          `Its subscription to ${endpoint.event_types.join(', ')}.`,
        ],
        action: `${LIST}/${endpoint.id}/delete`,
        confirm: 'Delete endpoint',
        back: `${LIST}/${endpoint.id}`,
      }),
      'rotate-secret': (endpoint) => ({
        question: `Rotate the signing secret of ${endpoint.description ?? endpoint.url}?`,
        lost: [
          'A new secret signs every message from now on.',
          'The current secret keeps signing too for 24 hours, then stops: update your receiver before then.',
        ],
        action: `${LIST}/${endpoint.id}/rotate-secret`,
        confirm: 'Rotate secret',
        back: `${LIST}/${endpoint.id}`,
      }),
    };
    for (const [action, question] of Object.entries(CONFIRMED)) {
      app.get<{ Params: { id: string } }>(`${LIST}/:id/${action}`, hidden, async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        try {
          const endpoint = await getEndpoint(ctx, view.access, request.params.id);
          const c = question(endpoint);
          const page = dashboardPage(view, { title: c.question, path: LIST }, confirmationBody(view.csrf, c));
          return sendPage(reply, page);
        } catch (error) {
          return notFound(view, reply, error);
        }
      });
    }
    /** A POST that skipped the question (an old form, a script) is asked it first. */
    const unconfirmed = (action: string, body: unknown) =>
      action in CONFIRMED && (body as Form | undefined)?.confirmed !== 'yes';

    /** State changes: done, then back to the page (post, redirect, get). */
    for (const [action, run] of Object.entries(ENDPOINT_ACTIONS)) {
      app.post<{ Params: { id: string } }>(`${LIST}/:id/${action}`, guarded, async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        try {
          if (unconfirmed(action, request.body))
            return reply.redirect(`${LIST}/${encodeURIComponent(request.params.id)}/${action}`, 303);
          const { message, to } = await run(ctx, view.access, request.params.id);
          return redirectWithFlash(ctx, reply, to ?? `${LIST}/${request.params.id}`, message);
        } catch (error) {
          return refused(reply, error, action, `${LIST}/${encodeURIComponent(request.params.id)}`);
        }
      });
    }

    app.get<{ Params: { id: string } }>(`${LIST}/deliveries/:id`, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      try {
        const delivery = await getDelivery(ctx, view.access, request.params.id);
        const flash = await takeFlash(ctx, request, reply);
        const page = dashboardPage(
          view,
          { title: 'Delivery', path: LIST, flash },
          deliveryPage(view.csrf, delivery, ctx.clock.now()),
        );
        return sendPage(reply, page);
      } catch (error) {
        return notFound(view, reply, error);
      }
    });

    app.post<{ Params: { id: string } }>(`${LIST}/deliveries/:id/replay`, guarded, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      const id = request.params.id;
      try {
        const attempt = await replayDelivery(ctx, view.access, id);
        const answer =
          attempt.status_code === null ? (attempt.error ?? 'no answer') : `HTTP ${attempt.status_code}`;
        return redirectWithFlash(ctx, reply, `${LIST}/deliveries/${id}`, `Replayed: ${answer}.`);
      } catch (error) {
        return refused(reply, error, 'replay', `${LIST}/deliveries/${encodeURIComponent(id)}`);
      }
    });
  };
}

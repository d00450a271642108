import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import type { AppContext } from '../../context.ts';
import { maskedBrokerUrl } from '../../delivery/destinations/spec.ts';
import { AppError, type FieldError } from '../../lib/errors.ts';
import { type DashboardView, dashboardPage, dashboardView, storeView } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { sendPage } from '../../web/layout.ts';
import { DELIVERY_STATUSES, type DeliveryStatus, getDelivery, listDeliveries } from './deliveries.ts';
import { createEndpoint } from './endpoint-create.ts';
import { revealSecret, rotateSecret } from './endpoint-secrets.ts';
import { updateEndpoint } from './endpoint-update.ts';
import { type DeliveryControlsInput, getEndpoint, listEndpoints } from './endpoints.ts';
import { doneFlash, ENDPOINT_ACTIONS } from './pages-actions.ts';
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
import { sendTestMessage } from './test-send.ts';

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

/** An expected failure shown on the page; anything else is a bug for the error handler. */
function flashOf(error: unknown): { kind: 'error'; message: string; status: number } {
  if (!(error instanceof AppError)) throw error;
  const fields = Array.isArray(error.extra.errors) ? (error.extra.errors as FieldError[]) : [];
  const details = fields.map((field) => `${field.path.replace(/^\//, '')} ${field.message}`).join('; ');
  return {
    kind: 'error',
    message: details ? `${error.message}: ${details}` : error.message,
    status: error.status,
  };
}

/** The dashboard's webhook pages (CSRF on every form; the services decide what the person may do). */
export function webhookPages(ctx: AppContext): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    // preValidation, not onRequest: the form's _csrf field is only readable once the body is parsed.
    const guarded = { ...hidden, preValidation: app.csrfProtection };

    async function renderEndpoint(
      view: DashboardView,
      reply: FastifyReply,
      id: string,
      query: Query,
      extras: EndpointPageExtras & { flash?: { kind: 'ok' | 'error'; message: string } | null },
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
      const flash = extras.flash ?? doneFlash(query.done);
      const body = endpointPage(view.csrf, endpoint, deliveries, filter, extras, {
        stats,
        now: ctx.clock.now(),
      });
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
        const flash = doneFlash(request.query.done);
        return sendPage(reply, dashboardPage(view, { title: 'Webhooks', path: LIST, flash }, body));
      } catch (error) {
        return notFound(view, reply, error);
      }
    });

    app.get(`${LIST}/new`, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      const form = { url: '', description: '', event_types: [], livemode: view.livemode };
      return sendPage(
        reply,
        dashboardPage(view, { title: 'Add an endpoint', path: LIST }, newEndpointForm(view.csrf, form)),
      );
    });

    app.post<{ Body: Form }>(LIST, guarded, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      const body = request.body ?? {};
      const form: EndpointForm = {
        url: text(body, 'url'),
        kind: text(body, 'destination_type') || 'https',
        exchange: text(body, 'exchange'),
        routing_key: text(body, 'routing_key'),
        subject: text(body, 'subject'),
        description: text(body, 'description').slice(0, 500),
        event_types: list(body, 'event_types'),
        livemode:
          text(body, 'mode') === 'test' ? false : text(body, 'mode') === 'live' ? true : view.livemode,
      };
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
        const secret = {
          value: created.secret,
          note: 'Keep it in your receiver; you can reveal it here again.',
        };
        return renderEndpoint(
          { ...view, access, livemode: form.livemode },
          reply,
          created.id,
          {},
          {
            secret,
            flash: { kind: 'ok', message: 'Endpoint added' },
          },
          201,
        );
      } catch (error) {
        const flash = flashOf(error);
        // A broker URL's password is never echoed: the form comes back with it masked.
        const shown = form.kind === 'https' ? form : { ...form, url: maskedBrokerUrl(form.url) };
        const page = dashboardPage(
          view,
          { title: 'Add an endpoint', path: LIST, flash },
          newEndpointForm(view.csrf, shown),
        );
        return sendPage(reply, page, flash.status);
      }
    });

    app.get<{ Params: { id: string }; Querystring: Query }>(`${LIST}/:id`, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      try {
        return await renderEndpoint(view, reply, request.params.id, request.query, {});
      } catch (error) {
        return notFound(view, reply, error);
      }
    });

    /** Actions whose answer is shown once on the endpoint page: the secret, the test's answer. */
    const showOnce: Array<[string, (view: DashboardView, id: string) => Promise<EndpointPageExtras>]> = [
      [
        'secret',
        async (v, id) => ({
          secret: { value: (await revealSecret(ctx, v.access, id)).secret, note: 'Shown at your request.' },
        }),
      ],
      [
        'rotate-secret',
        async (v, id) => ({
          secret: {
            value: (await rotateSecret(ctx, v.access, id)).secret,
            note: 'New secret. The previous one keeps signing too for 24 hours.',
          },
        }),
      ],
      ['test', async (v, id) => ({ test: await sendTestMessage(ctx, v.access, id, {}) })],
    ];
    for (const [action, run] of showOnce) {
      app.post<{ Params: { id: string } }>(`${LIST}/:id/${action}`, guarded, async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const id = request.params.id;
        try {
          return await renderEndpoint(view, reply, id, {}, await run(view, id));
        } catch (error) {
          const flash = flashOf(error);
          if (flash.status === 404) return notFound(view, reply, error);
          return renderEndpoint(view, reply, id, {}, { flash }, flash.status);
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
        try {
          await updateEndpoint(ctx, view.access, id, controlsOf(request.body ?? {}));
          return reply.redirect(`${LIST}/${id}?done=controls`, 303);
        } catch (error) {
          const flash = flashOf(error);
          if (flash.status === 404) return notFound(view, reply, error);
          return renderEndpoint(view, reply, id, {}, { flash }, flash.status);
        }
      },
    );

    /** State changes: done, then back to the page (post, redirect, get). */
    for (const [action, run] of Object.entries(ENDPOINT_ACTIONS)) {
      app.post<{ Params: { id: string } }>(`${LIST}/:id/${action}`, guarded, async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        try {
          const { done, to } = await run(ctx, view.access, request.params.id);
          return reply.redirect(`${to ?? `${LIST}/${request.params.id}`}?done=${done}`, 303);
        } catch (error) {
          return notFound(view, reply, error);
        }
      });
    }

    app.get<{ Params: { id: string } }>(`${LIST}/deliveries/:id`, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      try {
        const delivery = await getDelivery(ctx, view.access, request.params.id);
        const page = dashboardPage(
          view,
          { title: 'Delivery', path: LIST },
          deliveryPage(view.csrf, delivery),
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
      let flash: { kind: 'ok' | 'error'; message: string };
      let status = 200;
      try {
        const attempt = await replayDelivery(ctx, view.access, id);
        const answer =
          attempt.status_code === null ? (attempt.error ?? 'no answer') : `HTTP ${attempt.status_code}`;
        flash = { kind: 'ok', message: `Replayed: ${answer}` };
      } catch (error) {
        ({ status, ...flash } = flashOf(error));
        if (status === 404) return notFound(view, reply, error);
      }
      const delivery = await getDelivery(ctx, view.access, id);
      const page = dashboardPage(
        view,
        { title: 'Delivery', path: LIST, flash },
        deliveryPage(view.csrf, delivery),
      );
      return sendPage(reply, page, status);
    });
  };
}

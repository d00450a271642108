import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { closeSenders } from '../../delivery/attempt.ts';
import { errorResponses, Page } from '../../http/schemas.ts';
import { requireAccess } from '../accounts/access.ts';
import { getDelivery, listDeliveries } from './deliveries.ts';
import { createEndpoint } from './endpoint-create.ts';
import { revealSecret, rotateSecret } from './endpoint-secrets.ts';
import { updateEndpoint } from './endpoint-update.ts';
import { deleteEndpoint, getEndpoint, listEndpoints } from './endpoints.ts';
import { listEventTypes } from './event-types.ts';
import { replayDelivery, replayFailed } from './replay.ts';
import {
  BulkReplayResultSchema,
  CreateEndpointBody,
  DeliveryDetailSchema,
  DeliveryListQuery,
  DeliverySchema,
  EndpointIdParams,
  EndpointSchema,
  EndpointStatsSchema,
  EndpointWithSecretSchema,
  EventTypeSchema,
  EventTypesQuery,
  ListEndpointsQuery,
  ReplayResultSchema,
  SecretSchema,
  StatsQuery,
  TestSendBody,
  TestSendResultSchema,
  UpdateEndpointBody,
} from './schemas.ts';
import { endpointStats } from './stats.ts';
import { sendTestMessage } from './test-send.ts';

const tags = ['Webhooks'];
const read = (request: { principal: Parameters<typeof requireAccess>[0] }) =>
  requireAccess(request.principal, 'webhooks:read');
const write = (request: { principal: Parameters<typeof requireAccess>[0] }) =>
  requireAccess(request.principal, 'webhooks:write');

/** The webhook management API (CONTRACT.md, Webhook endpoints): thin handlers over the services. */
export function webhooksRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const byId = { params: EndpointIdParams, tags };
    // Broker connections opened by test sends and replays close with the server.
    app.addHook('onClose', async () => closeSenders(ctx));

    app.post(
      '/v1/webhook-endpoints',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          tags,
          summary: 'Create a webhook endpoint; livemode follows the token; the answer carries its secret',
          body: CreateEndpointBody,
          response: { 201: EndpointWithSecretSchema, ...errorResponses(400, 401, 403, 409, 422) },
        },
      },
      async (request, reply) => reply.code(201).send(await createEndpoint(ctx, write(request), request.body)),
    );

    app.get(
      '/v1/webhook-endpoints',
      {
        config: { auth: { scope: 'webhooks:read' } },
        schema: {
          tags,
          summary:
            'List webhook endpoints, newest first (no secrets); `api_version` lists those on one version',
          querystring: ListEndpointsQuery,
          response: { 200: Page(EndpointSchema), ...errorResponses(400, 401, 403) },
        },
      },
      async (request) => listEndpoints(ctx, read(request), request.query),
    );

    app.get(
      '/v1/webhook-endpoints/:id',
      {
        config: { auth: { scope: 'webhooks:read' } },
        schema: {
          ...byId,
          summary: 'A webhook endpoint',
          response: { 200: EndpointSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => getEndpoint(ctx, read(request), request.params.id),
    );

    app.patch(
      '/v1/webhook-endpoints/:id',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          ...byId,
          summary: 'Change url, event types, description, or enable and disable',
          description:
            'enabled: true clears disabled_reason; enabled: false records disabled_reason manual and cancels pending deliveries.',
          body: UpdateEndpointBody,
          response: { 200: EndpointSchema, ...errorResponses(400, 401, 403, 404, 422) },
        },
      },
      async (request) => updateEndpoint(ctx, write(request), request.params.id, request.body),
    );

    app.delete(
      '/v1/webhook-endpoints/:id',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          ...byId,
          summary: 'Delete a webhook endpoint with its delivery history',
          response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) => {
        await deleteEndpoint(ctx, write(request), request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/webhook-endpoints/:id/secret',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          ...byId,
          summary: "The endpoint's signing secret (needs webhooks:write)",
          response: { 200: SecretSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => revealSecret(ctx, write(request), request.params.id),
    );

    app.post(
      '/v1/webhook-endpoints/:id/rotate-secret',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          ...byId,
          summary: 'A new signing secret; the previous one signs too for 24 hours',
          response: { 200: SecretSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => rotateSecret(ctx, write(request), request.params.id),
    );

    app.post(
      '/v1/webhook-endpoints/:id/test',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          ...byId,
          summary: 'Send a test message (test: true, an example shipment) and answer what the receiver said',
          body: TestSendBody,
          response: { 200: TestSendResultSchema, ...errorResponses(400, 401, 403, 404, 429) },
        },
        // The body is optional: no body means the endpoint's first event type.
        preValidation: async (request) => {
          request.body ??= {};
        },
      },
      async (request) => sendTestMessage(ctx, write(request), request.params.id, request.body),
    );

    app.get(
      '/v1/webhook-endpoints/:id/deliveries',
      {
        config: { auth: { scope: 'webhooks:read' } },
        schema: {
          ...byId,
          summary: "An endpoint's deliveries, newest first",
          querystring: DeliveryListQuery,
          response: { 200: Page(DeliverySchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => listDeliveries(ctx, read(request), request.params.id, request.query),
    );

    app.get(
      '/v1/webhook-endpoints/:id/stats',
      {
        config: { auth: { scope: 'webhooks:read' } },
        schema: {
          ...byId,
          summary: 'How an endpoint is doing: attempts, success rate, durations, failing streak, per hour',
          description:
            'Counts scheduled attempts and replays (not test sends) over whole UTC hours: the current hour and the 23 (window=24h) or 167 (window=7d) before it.',
          querystring: StatsQuery,
          response: { 200: EndpointStatsSchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => endpointStats(ctx, read(request), request.params.id, request.query.window ?? '24h'),
    );

    app.post(
      '/v1/webhook-endpoints/:id/deliveries/replay',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          ...byId,
          summary: 'Queue again every failed and cancelled delivery of the last 7 days',
          response: { 200: BulkReplayResultSchema, ...errorResponses(401, 403, 404, 409, 429) },
        },
      },
      async (request) => replayFailed(ctx, write(request), request.params.id),
    );

    app.get(
      '/v1/webhook-deliveries/:id',
      {
        config: { auth: { scope: 'webhooks:read' } },
        schema: {
          ...byId,
          summary: 'One delivery: the message (headers and body) and every attempt',
          response: { 200: DeliveryDetailSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => getDelivery(ctx, read(request), request.params.id),
    );

    app.post(
      '/v1/webhook-deliveries/:id/replay',
      {
        config: { auth: { scope: 'webhooks:write' } },
        schema: {
          ...byId,
          summary: 'One more attempt of a delivery, now, with the same webhook-id',
          response: { 200: ReplayResultSchema, ...errorResponses(401, 403, 404, 409, 429) },
        },
      },
      async (request) => replayDelivery(ctx, write(request), request.params.id),
    );

    app.get(
      '/v1/webhook-event-types',
      {
        config: { auth: { scope: 'webhooks:read' } },
        schema: {
          tags,
          summary: 'Every event type Waybill sends, with the JSON Schema of its message body and an example',
          description:
            'The catalogue of the messages Waybill sends: shipment events (to webhook endpoints) and app events (to the events URL of apps). Each schema is JSON Schema draft 2020-12 of the whole envelope, and is also the request body of that type in the `webhooks` of this document.',
          querystring: EventTypesQuery,
          response: {
            200: Type.Object({ data: Type.Array(EventTypeSchema) }),
            ...errorResponses(400, 401, 403),
          },
        },
      },
      async (request) => {
        const access = read(request);
        return listEventTypes({
          tenantId: access.tenantId,
          livemode: access.livemode,
          at: ctx.clock.now(),
          ...(request.query.sent_to ? { sentTo: request.query.sent_to } : {}),
          ...(request.query.audience ? { audience: request.query.audience } : {}),
          ...(request.query.api_version ? { apiVersion: request.query.api_version } : {}),
        });
      },
    );
  };
}

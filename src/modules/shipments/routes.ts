import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Page, PageQuery } from '../../http/schemas.ts';
import { requireAccess } from '../accounts/access.ts';
import { withTrackingUrl, withTrackingUrls } from '../recipients/shipment-urls.ts';
import { PatchShipmentBody } from '../tracking/schemas.ts';
import {
  CreateShipmentBody,
  EventSchema,
  MoveShipmentBody,
  ShipmentResource,
  StatusName,
} from './schemas.ts';
import {
  createShipment,
  getShipment,
  listEvents,
  listShipments,
  moveShipment,
  presentForVersion,
  type TrackedShipment,
  updateShipment,
} from './service.ts';

const tags = ['Shipments'];
const IdParams = Type.Object({ id: Id(64) }, { additionalProperties: false });

/**
 * The shipment in the shape the request's `Waybill-Version` asks for (CONTRACT.md, Tracking): the
 * latest unless it names 2026-11-01, whose shape lacks the tracking fields. That shape is sent as
 * text, past the latest shape's serializer.
 */
function answer<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  value: T,
  shipments: (v: T) => unknown,
  code = 200,
): FastifyReply {
  reply.code(code);
  if (request.headers['waybill-version'] !== '2026-11-01') return reply.send(value);
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(shipments(value)));
}

/** 2026-11-01's closed shape: no tracking fields, and no tracking_url (issue 52 came after it). */
const oldShipment = (s: TrackedShipment & { tracking_url?: string }) => {
  const { tracking_url: _url, ...shipment } = s;
  return presentForVersion(shipment, '2026-11-01');
};

const writer = (request: FastifyRequest) => requireAccess(request.principal, 'shipments:write');

/** The REST answer of the latest version carries the shipment's tracking_url (issue 52). */
async function tracked(ctx: AppContext, request: FastifyRequest, shipment: TrackedShipment) {
  return withTrackingUrl(ctx, requireAccess(request.principal, 'shipments:read').tenantId, shipment);
}

async function trackedPage<P extends { data: TrackedShipment[] }>(
  ctx: AppContext,
  request: FastifyRequest,
  page: P,
) {
  const tenantId = requireAccess(request.principal, 'shipments:read').tenantId;
  return { ...page, data: await withTrackingUrls(ctx, tenantId, page.data) };
}

export function shipmentsRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/shipments',
      {
        config: { auth: { scope: 'shipments:write' } },
        schema: {
          tags,
          summary: 'Create a shipment (draft or confirmed); livemode follows the token',
          body: CreateShipmentBody,
          response: { 201: ShipmentResource, ...errorResponses(400, 401, 403, 404, 409, 422) },
        },
      },
      async (request, reply) =>
        answer(
          request,
          reply,
          await tracked(ctx, request, await createShipment(ctx, writer(request), request.body)),
          oldShipment,
          201,
        ),
    );

    app.get(
      '/v1/shipments',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags,
          summary: 'List shipments, newest first',
          querystring: Type.Object(
            {
              ...PageQuery.properties,
              status: Type.Optional(StatusName),
              customer_account_id: Type.Optional(Id(64)),
            },
            { additionalProperties: false },
          ),
          response: { 200: Page(ShipmentResource), ...errorResponses(400, 401, 403) },
        },
      },
      async (request, reply) =>
        answer(
          request,
          reply,
          await trackedPage(
            ctx,
            request,
            await listShipments(ctx, requireAccess(request.principal, 'shipments:read'), request.query),
          ),
          (page) => ({ ...page, data: page.data.map(oldShipment) }),
        ),
    );

    app.get(
      '/v1/shipments/:id',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags,
          summary: 'A shipment (the same fields as data.shipment in webhook messages)',
          params: IdParams,
          response: { 200: ShipmentResource, ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) =>
        answer(
          request,
          reply,
          await tracked(
            ctx,
            request,
            await getShipment(ctx, requireAccess(request.principal, 'shipments:read'), request.params.id),
          ),
          oldShipment,
        ),
    );

    app.patch(
      '/v1/shipments/:id',
      {
        config: { auth: { scope: 'shipments:write' } },
        schema: {
          tags,
          summary: "Set a shipment's tracking fields (never its status)",
          description:
            'carrier, carrier_tracking_number, destination, sub_status (of the current status), estimated_delivery, proof_of_delivery (once delivered). A field left out stays; null clears it. A change of estimated_delivery is told as shipment.eta_changed (event version 2026-12-01).',
          params: IdParams,
          body: PatchShipmentBody,
          response: { 200: ShipmentResource, ...errorResponses(400, 401, 403, 404, 422) },
        },
      },
      async (request, reply) =>
        answer(
          request,
          reply,
          await tracked(
            ctx,
            request,
            await updateShipment(ctx, writer(request), request.params.id, request.body),
          ),
          oldShipment,
        ),
    );

    app.post(
      '/v1/shipments/:id/status',
      {
        config: { auth: { scope: 'shipments:write' } },
        schema: {
          tags,
          summary: 'Move a shipment to another status',
          description:
            'draft -> confirmed | cancelled; confirmed -> picked_up | cancelled; picked_up -> in_transit | exception; in_transit -> out_for_delivery | exception; out_for_delivery -> delivered | exception; exception -> in_transit | out_for_delivery | returned.',
          params: IdParams,
          body: MoveShipmentBody,
          response: { 200: ShipmentResource, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request, reply) =>
        answer(
          request,
          reply,
          await tracked(
            ctx,
            request,
            await moveShipment(ctx, writer(request), request.params.id, request.body),
          ),
          oldShipment,
        ),
    );

    app.get(
      '/v1/events',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags,
          summary: 'Events of your shipments, newest first',
          querystring: Type.Object(
            { ...PageQuery.properties, shipment_id: Type.Optional(Id(64)) },
            { additionalProperties: false },
          ),
          response: { 200: Page(EventSchema), ...errorResponses(400, 401, 403) },
        },
      },
      async (request) => listEvents(ctx, requireAccess(request.principal, 'shipments:read'), request.query),
    );
  };
}

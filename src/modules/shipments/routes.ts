import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Page, PageQuery } from '../../http/schemas.ts';
import { requireAccess } from '../accounts/access.ts';
import { withTrackingUrl, withTrackingUrls } from '../recipients/shipment-urls.ts';
import {
  CreateShipmentBody,
  EventSchema,
  MoveShipmentBody,
  ShipmentResource,
  StatusName,
} from './schemas.ts';
import { createShipment, getShipment, listEvents, listShipments, moveShipment } from './service.ts';

const tags = ['Shipments'];
const IdParams = Type.Object({ id: Id(64) }, { additionalProperties: false });

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
          response: { 201: ShipmentResource, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request, reply) => {
        const access = requireAccess(request.principal, 'shipments:write');
        const shipment = await createShipment(ctx, access, request.body);
        return reply.code(201).send(await withTrackingUrl(ctx, access.tenantId, shipment));
      },
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
      async (request) => {
        const access = requireAccess(request.principal, 'shipments:read');
        const page = await listShipments(ctx, access, request.query);
        return { ...page, data: await withTrackingUrls(ctx, access.tenantId, page.data) };
      },
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
      async (request) => {
        const access = requireAccess(request.principal, 'shipments:read');
        return withTrackingUrl(ctx, access.tenantId, await getShipment(ctx, access, request.params.id));
      },
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
      async (request) => {
        const access = requireAccess(request.principal, 'shipments:write');
        const shipment = await moveShipment(ctx, access, request.params.id, request.body);
        return withTrackingUrl(ctx, access.tenantId, shipment);
      },
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

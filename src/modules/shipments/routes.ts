import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Page, PageQuery } from '../../http/schemas.ts';
import { requireAccess } from '../accounts/access.ts';
import { CreateShipmentBody, EventSchema, MoveShipmentBody, ShipmentSchema, StatusName } from './schemas.ts';
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
          response: { 201: ShipmentSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(await createShipment(ctx, requireAccess(request.principal, 'shipments:write'), request.body)),
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
          response: { 200: Page(ShipmentSchema), ...errorResponses(400, 401, 403) },
        },
      },
      async (request) =>
        listShipments(ctx, requireAccess(request.principal, 'shipments:read'), request.query),
    );

    app.get(
      '/v1/shipments/:id',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags,
          summary: 'A shipment (the same fields as data.shipment in webhook messages)',
          params: IdParams,
          response: { 200: ShipmentSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) =>
        getShipment(ctx, requireAccess(request.principal, 'shipments:read'), request.params.id),
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
          response: { 200: ShipmentSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) =>
        moveShipment(
          ctx,
          requireAccess(request.principal, 'shipments:write'),
          request.params.id,
          request.body,
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

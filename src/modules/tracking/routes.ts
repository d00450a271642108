import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Page, PageQuery } from '../../http/schemas.ts';
import { requireAccess } from '../accounts/access.ts';
import { CheckpointAnswer } from '../shipments/schemas.ts';
import { subStatusCatalogue } from './catalogue.ts';
import { applyCheckpoint, listCheckpoints, targetOf } from './checkpoints.ts';
import { CheckpointBody, CheckpointSchema, SubStatusSchema } from './schemas.ts';
import { startSimulation } from './simulation.ts';

const tags = ['Shipments'];
const ScenarioName = Type.Union([
  Type.Literal('on_time'),
  Type.Literal('delayed'),
  Type.Literal('exception_then_delivered'),
  Type.Literal('returned'),
]);
const IdParams = Type.Object({ id: Id(64) }, { additionalProperties: false });

export function trackingRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/shipment-sub-statuses',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags,
          summary: 'The sub-status catalogue: each code details one status and is allowed only with it',
          response: {
            200: Type.Object({ data: Type.Array(SubStatusSchema) }, { additionalProperties: false }),
            ...errorResponses(401, 403),
          },
        },
      },
      async (request) => {
        requireAccess(request.principal, 'shipments:read');
        return { data: subStatusCatalogue() };
      },
    );

    app.post(
      '/v1/shipments/:id/checkpoints',
      {
        config: { auth: { scope: 'shipments:write' } },
        schema: {
          tags,
          summary: "Add a checkpoint to a shipment's timeline",
          description:
            'A checkpoint with a status moves the shipment forward along the allowed moves, through the statuses between (each with its events, in order). One older than the newest checkpoint, or one whose status is behind, is kept with applied false and moves nothing. The same external_id again answers 200 with the first checkpoint and changes nothing.',
          params: IdParams,
          body: CheckpointBody,
          response: {
            200: CheckpointAnswer,
            201: CheckpointAnswer,
            ...errorResponses(400, 401, 403, 404, 422),
          },
        },
      },
      async (request, reply) => {
        const access = requireAccess(request.principal, 'shipments:write');
        const result = await applyCheckpoint(ctx, {
          ...targetOf(access, request.params.id),
          input: request.body,
          source: 'api',
        });
        return reply
          .code(result.created ? 201 : 200)
          .send({ checkpoint: result.checkpoint, shipment: result.shipment, applied: result.applied });
      },
    );

    app.post(
      '/v1/shipments/:id/simulate',
      {
        config: { auth: { scope: 'shipments:write' } },
        schema: {
          tags,
          summary: 'Test mode: walk a test shipment through a scenario of checkpoints',
          description:
            "The worker adds the scenario's checkpoints (source simulation) one every 5 seconds of the service clock, each with the events it causes, so an integration sees every message without a carrier. A new simulation replaces one under way. A live shipment is 409 shipment.live.",
          params: IdParams,
          body: Type.Object({ scenario: ScenarioName }, { additionalProperties: false }),
          response: {
            202: Type.Object(
              {
                id: Type.String({ description: 'sim_...' }),
                shipment_id: Type.String(),
                scenario: ScenarioName,
                steps: Type.Integer({ description: 'How many checkpoints the walk adds' }),
                next_step_at: Type.String({ format: 'date-time' }),
              },
              { additionalProperties: false },
            ),
            ...errorResponses(400, 401, 403, 404, 409),
          },
        },
      },
      async (request, reply) => {
        const access = requireAccess(request.principal, 'shipments:write');
        return reply
          .code(202)
          .send(await startSimulation(ctx, access, request.params.id, request.body.scenario));
      },
    );

    app.get(
      '/v1/shipments/:id/checkpoints',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags,
          summary: "A shipment's timeline, newest occurred_at first",
          params: IdParams,
          querystring: PageQuery,
          response: { 200: Page(CheckpointSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => {
        const access = requireAccess(request.principal, 'shipments:read');
        return listCheckpoints(ctx, targetOf(access, request.params.id), request.query);
      },
    );
  };
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id } from '../../http/schemas.ts';
import { requireAccess } from '../accounts/access.ts';
import { ShipmentResource } from '../shipments/schemas.ts';
import { rotateTrackingUrl } from './rotation.ts';

const IdParams = Type.Object({ id: Id(64) }, { additionalProperties: false });

/** The API of the recipients capability: tracking links, branding, notifications. */
export function recipientsRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/shipments/:id/tracking-url/rotate',
      {
        config: { auth: { scope: 'shipments:write' } },
        schema: {
          tags: ['Shipments'],
          summary: 'Give the shipment a new tracking_url; the old link then finds nothing',
          params: IdParams,
          response: { 200: ShipmentResource, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) =>
        rotateTrackingUrl(ctx, requireAccess(request.principal, 'shipments:write'), request.params.id),
    );
  };
}

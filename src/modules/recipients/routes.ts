import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Nullable, Timestamp } from '../../http/schemas.ts';
import { requireAccess } from '../accounts/access.ts';
import { ShipmentResource } from '../shipments/schemas.ts';
import { listNotifications } from './notification-log.ts';
import { rotateTrackingUrl } from './rotation.ts';
import { MilestoneName } from './schemas.ts';

const IdParams = Type.Object({ id: Id(64) }, { additionalProperties: false });

const NotificationSchema = Type.Object(
  {
    id: Type.String({ description: 'rnt_...' }),
    event: MilestoneName,
    to: Type.String({ description: 'The address, masked (g***@e***.test); [redacted] after an erasure' }),
    status: Type.Enum(['queued', 'sent', 'failed', 'suppressed'], {
      type: 'string',
      description: 'queued while it waits for its (next) attempt',
    }),
    reason: Nullable(Type.String(), {
      description:
        'Why it is suppressed or failed, or the last failure while queued; test_mode_outbox for a test shipment',
    }),
    created_at: Timestamp,
  },
  { additionalProperties: false, $id: 'RecipientNotification' },
);

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

    app.get(
      '/v1/shipments/:id/notifications',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags: ['Shipments'],
          summary: "The e-mails sent to the shipment's recipient at its milestones, newest first",
          params: IdParams,
          response: {
            200: Type.Object({ data: Type.Array(NotificationSchema) }, { additionalProperties: false }),
            ...errorResponses(401, 403, 404),
          },
        },
      },
      async (request) =>
        listNotifications(ctx, requireAccess(request.principal, 'shipments:read'), request.params.id),
    );
  };
}

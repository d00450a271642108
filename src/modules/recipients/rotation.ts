import type { AppContext } from '../../context.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { getShipment, type TrackedShipment } from '../shipments/service.ts';
import { type WithTrackingUrl, withTrackingUrl } from './shipment-urls.ts';
import { issueToken } from './tokens.ts';

/** POST /v1/shipments/{id}/tracking-url/rotate: a new token; the old link then finds nothing. */
export async function rotateTrackingUrl(
  ctx: AppContext,
  access: TenantAccess,
  shipmentId: string,
): Promise<WithTrackingUrl<TrackedShipment>> {
  requireScope(access, 'shipments:write');
  // Another company's, account's or mode's shipment is as unknown as a made-up id.
  const shipment = await getShipment(ctx, access, shipmentId);
  await issueToken(ctx.db, { tenantId: access.tenantId, shipmentId }, ctx.clock.now());
  return withTrackingUrl(ctx, access.tenantId, shipment);
}

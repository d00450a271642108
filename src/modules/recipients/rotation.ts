import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { canSee, requireScope, type TenantAccess } from '../accounts/access.ts';
import { presentShipment } from '../shipments/service.ts';
import { type ShipmentWithTrackingUrl, withTrackingUrl } from './shipment-urls.ts';
import { issueToken } from './tokens.ts';

/** POST /v1/shipments/{id}/tracking-url/rotate: a new token; the old link then finds nothing. */
export async function rotateTrackingUrl(
  ctx: AppContext,
  access: TenantAccess,
  shipmentId: string,
): Promise<ShipmentWithTrackingUrl> {
  requireScope(access, 'shipments:write');
  const row = await ctx.db
    .selectFrom('shipments')
    .selectAll()
    .where('id', '=', shipmentId)
    .where('tenant_id', '=', access.tenantId)
    .executeTakeFirst();
  // Another company's, account's or mode's shipment is as unknown as a made-up id.
  if (!row || !canSee(access, row)) throw new AppError('shipment.not_found');
  await issueToken(ctx.db, { tenantId: access.tenantId, shipmentId }, ctx.clock.now());
  return withTrackingUrl(ctx, access.tenantId, presentShipment(row));
}

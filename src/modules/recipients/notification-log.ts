import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { canSee, requireScope, type TenantAccess } from '../accounts/access.ts';
import type { Milestone } from './milestones.ts';

export interface NotificationEntry {
  id: string;
  event: Milestone;
  to: string;
  status: 'queued' | 'sent' | 'failed' | 'suppressed';
  reason: string | null;
  created_at: string;
}

/** GET /v1/shipments/{id}/notifications: the recipient e-mails of a shipment, newest first, masked. */
export async function listNotifications(
  ctx: AppContext,
  access: TenantAccess,
  shipmentId: string,
): Promise<{ data: NotificationEntry[] }> {
  requireScope(access, 'shipments:read');
  const shipment = await ctx.db
    .selectFrom('shipments')
    .select(['tenant_id', 'customer_account_id', 'livemode'])
    .where('id', '=', shipmentId)
    .where('tenant_id', '=', access.tenantId)
    .executeTakeFirst();
  if (!shipment || !canSee(access, shipment)) throw new AppError('shipment.not_found');
  const rows = await ctx.db
    .selectFrom('recipient_notifications')
    .select(['id', 'event', 'to_masked', 'status', 'reason', 'created_at'])
    .where('tenant_id', '=', access.tenantId)
    .where('shipment_id', '=', shipmentId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return {
    data: rows.map((row) => ({
      id: row.id,
      event: row.event as Milestone,
      to: row.to_masked,
      status: row.status,
      reason: row.reason,
      created_at: row.created_at.toISOString(),
    })),
  };
}

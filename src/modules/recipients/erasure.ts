import type { Trx } from '../../context.ts';
import { rotateTokens } from './tokens.ts';

/**
 * What `customer.redact` does here, in the erasure's transaction: each shipment gets a new tracking
 * token (the links handed out find nothing), the e-mails still queued for the person go, and the
 * log of those sent keeps only the masked address.
 */
export async function forgetRecipients(
  trx: Trx,
  tenantId: string,
  shipmentIds: readonly string[],
  at: Date,
): Promise<void> {
  if (shipmentIds.length === 0) return;
  await rotateTokens(trx, tenantId, shipmentIds, at);
  await trx
    .deleteFrom('recipient_notifications')
    .where('tenant_id', '=', tenantId)
    .where('shipment_id', 'in', [...shipmentIds])
    .where('status', '=', 'queued')
    .execute();
  await trx
    .updateTable('recipient_notifications')
    .set({ to_address: null, to_masked: '[redacted]' })
    .where('tenant_id', '=', tenantId)
    .where('shipment_id', 'in', [...shipmentIds])
    .execute();
}

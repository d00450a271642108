import { sql } from 'kysely';
import type { Trx } from './context.ts';

/**
 * An endpoint's ordering changed (PATCH): its queued messages join their shipments' lines, or
 * leave them, at once (migration 0041). Joining, they take their places in the order of their
 * events; a message already in flight stays first in its line until it is done.
 */
export async function applyOrdering(
  trx: Trx,
  endpoint: { id: string; tenantId: string },
  ordering: 'none' | 'per_shipment',
): Promise<void> {
  // Every statement names the endpoint's company: one shard on Citus.
  const { id: endpointId, tenantId } = endpoint;
  if (ordering === 'none') {
    // Out of line, each is due at its own time again (not the one of a retry it waited behind).
    await sql`
      UPDATE webhook_deliveries q SET line_shipment_id = NULL, line_seq = NULL, due_at = q.next_attempt_at
      WHERE q.endpoint_id = ${endpointId} AND q.tenant_id = ${tenantId} AND q.due_at IS NOT NULL
        AND q.line_shipment_id IS NOT NULL`.execute(trx);
    return;
  }
  await sql`
    UPDATE webhook_deliveries q SET line_shipment_id = l.shipment_id, line_seq = l.seq
    FROM (
      SELECT o.id, o.shipment_id, nextval('webhook_queue_order') AS seq
      FROM (
        SELECT q2.id, ev.shipment_id
        FROM webhook_deliveries q2
        JOIN events ev ON ev.id = q2.event_id AND ev.tenant_id = q2.tenant_id
        WHERE q2.endpoint_id = ${endpointId} AND q2.tenant_id = ${tenantId} AND q2.due_at IS NOT NULL
          AND q2.line_shipment_id IS NULL
          AND ev.shipment_id IS NOT NULL
        ORDER BY ev.created_at, ev.id
      ) o
    ) l
    WHERE q.id = l.id AND q.tenant_id = ${tenantId} AND q.due_at IS NOT NULL`.execute(trx);
}

import { sql } from 'kysely';
import type { Trx } from './context.ts';

/**
 * An endpoint's ordering changed (PATCH): its queued messages join their shipments' lines, or
 * leave them, at once (migration 0041). Joining, they take their places in the order of their
 * events; a message already in flight stays first in its line until it is done.
 */
export async function applyOrdering(
  trx: Trx,
  endpointId: string,
  ordering: 'none' | 'per_shipment',
): Promise<void> {
  if (ordering === 'none') {
    // Out of line, each is due at its own time again (not the one of a retry it waited behind).
    await sql`
      UPDATE webhook_queue q SET shipment_id = NULL, seq = NULL, next_attempt_at = d.next_attempt_at
      FROM webhook_deliveries d
      WHERE q.endpoint_id = ${endpointId} AND q.shipment_id IS NOT NULL AND d.id = q.delivery_id`.execute(
      trx,
    );
    return;
  }
  await sql`
    UPDATE webhook_queue q SET shipment_id = l.shipment_id, seq = l.seq
    FROM (
      SELECT o.delivery_id, o.shipment_id, nextval('webhook_queue_order') AS seq
      FROM (
        SELECT q2.delivery_id, ev.shipment_id
        FROM webhook_queue q2
        JOIN webhook_deliveries d ON d.id = q2.delivery_id
        JOIN events ev ON ev.id = d.event_id
        WHERE q2.endpoint_id = ${endpointId} AND q2.shipment_id IS NULL AND ev.shipment_id IS NOT NULL
        ORDER BY ev.created_at, ev.id
      ) o
    ) l
    WHERE q.delivery_id = l.delivery_id`.execute(trx);
}

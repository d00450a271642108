import type { Db } from '../db/database.ts';
import type { DisabledReason } from './context.ts';

export type { DisabledReason } from './context.ts';

/**
 * Disables an endpoint and cancels what was waiting for it (spec 3.3: both disables cancel
 * pending deliveries). Pass the caller's transaction so the two changes commit together. An app's
 * events target is not an endpoint and is never disabled. Answers how many deliveries were
 * cancelled, or null when nothing was disabled (for the metrics, once committed).
 */
export async function disableEndpoint(
  db: Db,
  endpointId: string,
  reason: DisabledReason,
  now: Date,
): Promise<number | null> {
  const disabled = await db
    .updateTable('webhook_endpoints')
    .set({ enabled: false, disabled_reason: reason, updated_at: now })
    .where('id', '=', endpointId)
    .where('kind', '<>', 'app_events')
    .executeTakeFirst();
  if (Number(disabled.numUpdatedRows) === 0) return null;
  const cancelled = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'cancelled', next_attempt_at: null, updated_at: now })
    // Through the queue: the log's own rows of the endpoint are mostly history.
    .where('id', 'in', (eb) =>
      eb.selectFrom('webhook_queue').select('delivery_id').where('endpoint_id', '=', endpointId),
    )
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(cancelled.numUpdatedRows);
}

/** Enables an endpoint again: the reason and the failure streak are forgotten. */
export async function enableEndpoint(db: Db, endpointId: string, now: Date): Promise<void> {
  await db
    .updateTable('webhook_endpoints')
    .set({
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      failing_noticed_at: null,
      updated_at: now,
    })
    .where('id', '=', endpointId)
    .execute();
}

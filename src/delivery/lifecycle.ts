import { type RawBuilder, type SqlBool, sql } from 'kysely';
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
  return cancelQueued(db, sql<SqlBool>`d.endpoint_id = ${endpointId}`, now);
}

/**
 * Cancels the queued deliveries (`d`) that `filter` names: they leave the queue in the same write,
 * and a shipment's line they leave moves up. Read through the claim's index (rows with a `due_at`):
 * an endpoint's other rows are mostly history. Answers how many were cancelled.
 */
export async function cancelQueued(db: Db, filter: RawBuilder<SqlBool>, now: Date): Promise<number> {
  const { rows } = await sql<{ endpoint_id: string; line_shipment_id: string | null }>`
    UPDATE webhook_deliveries d SET status = 'cancelled', next_attempt_at = NULL, due_at = NULL,
      locked_by = NULL, locked_until = NULL, updated_at = ${now.toISOString()}::timestamptz
    WHERE d.due_at IS NOT NULL AND d.status = 'pending' AND ${filter}
    RETURNING d.endpoint_id, d.line_shipment_id`.execute(db);
  const lined = rows.filter((row) => row.line_shipment_id !== null);
  if (lined.length > 0)
    await sql`SELECT webhook_lines_follow(${lined.map((r) => r.endpoint_id)}::text[],
      ${lined.map((r) => r.line_shipment_id)}::text[])`.execute(db);
  return rows.length;
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

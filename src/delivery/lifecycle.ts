import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DisabledReason } from './context.ts';

export type { DisabledReason } from './context.ts';

/**
 * Disables an endpoint and cancels what was waiting for it (spec 3.3: both disables cancel
 * pending deliveries). Pass the caller's transaction so the two changes commit together. An app's
 * events target is not an endpoint and is never disabled. Answers how many deliveries were
 * cancelled, or null when nothing was disabled (for the metrics, once committed). With the
 * endpoint's company (`tenantId`), every statement names it: one shard on Citus.
 */
export async function disableEndpoint(
  db: Db,
  endpointId: string,
  reason: DisabledReason,
  now: Date,
  tenantId?: string,
): Promise<number | null> {
  let update = db
    .updateTable('webhook_endpoints')
    .set({ enabled: false, disabled_reason: reason, updated_at: now })
    .where('id', '=', endpointId)
    .where('kind', '<>', 'app_events');
  if (tenantId !== undefined) update = update.where('tenant_id', '=', tenantId);
  const disabled = await update.executeTakeFirst();
  if (Number(disabled.numUpdatedRows) === 0) return null;
  const filter =
    tenantId === undefined
      ? sql<SqlBool>`d.endpoint_id = ${endpointId}`
      : sql<SqlBool>`d.endpoint_id = ${endpointId} AND d.tenant_id = ${tenantId}`;
  return cancelQueued(db, filter, now);
}

/**
 * Cancels the queued deliveries (`d`) that `filter` names: they leave the queue in the same write,
 * and a shipment's line they leave moves up. Read through the claim's index (rows with a `due_at`):
 * an endpoint's other rows are mostly history. Answers how many were cancelled.
 */
export async function cancelQueued(db: Db, filter: RawBuilder<SqlBool>, now: Date): Promise<number> {
  const { rows } = await sql<{ tenant_id: string; endpoint_id: string; line_shipment_id: string | null }>`
    UPDATE webhook_deliveries d SET status = 'cancelled', next_attempt_at = NULL, due_at = NULL,
      locked_by = NULL, locked_until = NULL, updated_at = ${now.toISOString()}::timestamptz
    WHERE d.due_at IS NOT NULL AND d.status = 'pending' AND ${filter}
    RETURNING d.tenant_id, d.endpoint_id, d.line_shipment_id`.execute(db);
  const lined = rows.filter((row) => row.line_shipment_id !== null);
  // The lines move up company by company, in one statement: on Citus each call runs in its
  // company's shard (migration 0081); a cancellation is mostly of one company's rows.
  if (lined.length > 0)
    await sql`
      SELECT webhook_lines_follow_tenant(g.tenant_id, g.endpoints, g.shipments)
      FROM (SELECT u.tenant_id, array_agg(u.endpoint_id) AS endpoints, array_agg(u.shipment_id) AS shipments
        FROM unnest(${lined.map((r) => r.tenant_id)}::text[], ${lined.map((r) => r.endpoint_id)}::text[],
          ${lined.map((r) => r.line_shipment_id)}::text[]) AS u(tenant_id, endpoint_id, shipment_id)
        GROUP BY u.tenant_id) g`.execute(db);
  return rows.length;
}

/** Enables an endpoint again: the reason and the failure streak are forgotten. */
export async function enableEndpoint(
  db: Db,
  endpointId: string,
  now: Date,
  tenantId?: string,
): Promise<void> {
  let update = db
    .updateTable('webhook_endpoints')
    .set({
      enabled: true,
      disabled_reason: null,
      failing_since: null,
      failing_noticed_at: null,
      updated_at: now,
    })
    .where('id', '=', endpointId);
  if (tenantId !== undefined) update = update.where('tenant_id', '=', tenantId);
  await update.execute();
}

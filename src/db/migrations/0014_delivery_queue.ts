import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/** Keeps the queue in step with the log (migration 0041 adds the order per shipment to it). */
export const QUEUE_FOLLOW = `CREATE FUNCTION webhook_queue_follow() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      INSERT INTO webhook_queue (delivery_id, endpoint_id, next_attempt_at)
        SELECT id, endpoint_id, next_attempt_at FROM new_rows
        WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
    ELSIF TG_OP = 'UPDATE' THEN
      DELETE FROM webhook_queue q USING new_rows n
        WHERE q.delivery_id = n.id AND (n.status <> 'pending' OR n.next_attempt_at IS NULL);
      -- Due again (a retry's new time, a replay): its place in line, and no lease.
      INSERT INTO webhook_queue (delivery_id, endpoint_id, next_attempt_at)
        SELECT n.id, n.endpoint_id, n.next_attempt_at FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE n.status = 'pending' AND n.next_attempt_at IS NOT NULL
          AND (o.status <> 'pending' OR o.next_attempt_at IS DISTINCT FROM n.next_attempt_at)
      ON CONFLICT (delivery_id) DO UPDATE
        SET next_attempt_at = EXCLUDED.next_attempt_at, locked_by = NULL, locked_until = NULL;
    ELSE
      DELETE FROM webhook_queue q USING old_rows o WHERE q.delivery_id = o.id;
    END IF;
    RETURN NULL;
  END $$`;

/**
 * The queue apart from the log (issue 10 throughput; decision 0017). `webhook_queue` holds one
 * small row per pending, scheduled delivery: its target, when it is due and the worker's lease.
 * The claim walks and leases it; the delivery log keeps the message and its outcome.
 *
 * Why: with the queue's index on the log itself (`status` in its predicate), every outcome was an
 * update PostgreSQL could not keep on its page (not HOT): a new copy of the 1 KB row and a new
 * entry in every index of a table that holds a month of history. Now the log's outcome update
 * touches no indexed column and stays on its page, and the lease is written to a row a tenth the
 * size. A delivered message leaves the queue by a delete, which is what a job queue does.
 *
 * The queue follows the log by statement-level triggers, in the transaction that changes the log:
 * a delivery is in the queue exactly while it is pending with a time set, whatever statement made
 * it so (fan-out, retries, replays, cancellations, deletions by retention or erasure).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE webhook_queue (
      delivery_id text PRIMARY KEY,
      endpoint_id text NOT NULL,
      next_attempt_at timestamptz NOT NULL,
      locked_by text,
      locked_until timestamptz
    ) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
      autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 2000)`,
    `INSERT INTO webhook_queue (delivery_id, endpoint_id, next_attempt_at, locked_by, locked_until)
      SELECT id, endpoint_id, next_attempt_at, locked_by, locked_until FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at IS NOT NULL`,
    'CREATE INDEX webhook_queue_due_by_target ON webhook_queue (endpoint_id, next_attempt_at)',
    'DROP INDEX webhook_deliveries_due_by_target',
    'ALTER TABLE webhook_deliveries DROP COLUMN locked_by, DROP COLUMN locked_until',
    `ALTER TABLE webhook_deliveries RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold,
      autovacuum_analyze_scale_factor)`,
    QUEUE_FOLLOW,
    `CREATE TRIGGER webhook_queue_on_insert AFTER INSERT ON webhook_deliveries
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_queue_follow()`,
    `CREATE TRIGGER webhook_queue_on_update AFTER UPDATE ON webhook_deliveries
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_queue_follow()`,
    `CREATE TRIGGER webhook_queue_on_delete AFTER DELETE ON webhook_deliveries
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_queue_follow()`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TRIGGER webhook_queue_on_delete ON webhook_deliveries',
    'DROP TRIGGER webhook_queue_on_update ON webhook_deliveries',
    'DROP TRIGGER webhook_queue_on_insert ON webhook_deliveries',
    'DROP FUNCTION webhook_queue_follow()',
    'ALTER TABLE webhook_deliveries ADD COLUMN locked_by text, ADD COLUMN locked_until timestamptz',
    `UPDATE webhook_deliveries d SET locked_by = q.locked_by, locked_until = q.locked_until
      FROM webhook_queue q WHERE q.delivery_id = d.id AND q.locked_by IS NOT NULL`,
    `CREATE INDEX webhook_deliveries_due_by_target ON webhook_deliveries (endpoint_id, next_attempt_at)
      WHERE status = 'pending'`,
    `ALTER TABLE webhook_deliveries SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
      autovacuum_analyze_scale_factor = 0.02)`,
    'DROP TABLE webhook_queue',
  ]);
}

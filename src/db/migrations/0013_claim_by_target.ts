import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * The claim walks the queue target by target (claim.ts, issue 10 fairness): pending deliveries
 * indexed by target, then by when they are due. It replaces the index by due time alone, in which
 * a stuck endpoint's waiting rows sat in front of everyone else's and every claim read past them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE INDEX webhook_deliveries_due_by_target ON webhook_deliveries (endpoint_id, next_attempt_at)
      WHERE status = 'pending'`,
    'DROP INDEX webhook_deliveries_due',
    // A delivered row leaves a dead entry in that index until vacuum, and claims read past them.
    // PostgreSQL's default waits for a fifth of the table to change, and the table is mostly
    // history: a month of it puts vacuum millions of rows away. Vacuum after a few thousand instead
    // (the history's pages are all-visible, so a vacuum skips them).
    `ALTER TABLE webhook_deliveries SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
      autovacuum_analyze_scale_factor = 0.02)`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE webhook_deliveries RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold,
      autovacuum_analyze_scale_factor)`,
    `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
    'DROP INDEX webhook_deliveries_due_by_target',
  ]);
}

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
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
    'DROP INDEX webhook_deliveries_due_by_target',
  ]);
}

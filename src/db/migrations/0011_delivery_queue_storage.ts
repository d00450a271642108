import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Cheaper writes per delivery (issue 10). The two indexes that only serve retention (rows older
 * than 30 days, by time) become BRIN: rows arrive in time order, so a block range summary finds
 * them as well as a B-tree does, and costs almost nothing to keep up on every insert. And the
 * queue's pages keep room for new row versions, so that a claim's lease update can stay on its
 * page (a HOT update, no new index entries).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP INDEX webhook_attempts_time',
    'CREATE INDEX webhook_attempts_time ON webhook_attempts USING brin (attempted_at)',
    'DROP INDEX webhook_deliveries_created',
    'CREATE INDEX webhook_deliveries_created ON webhook_deliveries USING brin (created_at)',
    'ALTER TABLE webhook_deliveries SET (fillfactor = 80)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE webhook_deliveries RESET (fillfactor)',
    'DROP INDEX webhook_deliveries_created',
    'CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at)',
    'DROP INDEX webhook_attempts_time',
    'CREATE INDEX webhook_attempts_time ON webhook_attempts (attempted_at)',
  ]);
}

import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * When an endpoint's current failing streak was told (`webhook_endpoint.failing`, once it has lasted
 * 24 hours; issue 23): once per streak, and a later 2xx is told as a recovery only for a streak that
 * was told as failing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE webhook_endpoints ADD COLUMN failing_noticed_at timestamptz']);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE webhook_endpoints DROP COLUMN failing_noticed_at']);
}

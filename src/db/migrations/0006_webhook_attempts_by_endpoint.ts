import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * An endpoint's attempts in time order: the stats endpoint (GET /v1/webhook-endpoints/{id}/stats)
 * reads one endpoint's last 24 hours or 7 days, and its last failure, without scanning every
 * endpoint's history.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP INDEX webhook_attempts_endpoint']);
}

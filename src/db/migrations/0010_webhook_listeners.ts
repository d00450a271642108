import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * `waybill listen` (issue 11): a listener is a test endpoint of kind 'listener' that the process
 * holding its connection keeps alive; one not seen for the grace period is removed.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE webhook_endpoints ADD COLUMN listener_seen_at timestamptz',
    "CREATE INDEX webhook_endpoints_listeners ON webhook_endpoints (listener_seen_at) WHERE kind = 'listener'",
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    "DELETE FROM webhook_endpoints WHERE kind = 'listener'",
    'DROP INDEX webhook_endpoints_listeners',
    'ALTER TABLE webhook_endpoints DROP COLUMN listener_seen_at',
  ]);
}

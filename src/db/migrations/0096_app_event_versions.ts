import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 51 item 4, decision 0081: an app's events URL is pinned to an `api_version` of its own
 * (app subscriptions are targets in `webhook_endpoints` and carry theirs since migration 0087).
 * The apps there are keep `2026-11-01` (the default); the code registers new ones on the latest.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    "ALTER TABLE apps ADD COLUMN events_api_version text NOT NULL DEFAULT '2026-11-01'",
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE apps DROP COLUMN events_api_version']);
}

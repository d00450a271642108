import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 51, decision 0081: the second event version. Every target (endpoint, app subscription, an
 * app's events URL, a listener) is pinned to an `api_version`; the ones there are keep
 * `2026-11-01`, the code gives new ones the latest. The partial index finds a company's targets of
 * `2026-12-01`, whose new deliveries get that version's envelope after the fan-out.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    "ALTER TABLE webhook_endpoints ADD COLUMN api_version text NOT NULL DEFAULT '2026-11-01'",
    `CREATE INDEX webhook_endpoints_latest_version ON webhook_endpoints (tenant_id)
      WHERE api_version = '2026-12-01'`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP INDEX webhook_endpoints_latest_version',
    'ALTER TABLE webhook_endpoints DROP COLUMN api_version',
  ]);
}

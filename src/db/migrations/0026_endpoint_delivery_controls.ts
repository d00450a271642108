import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * The receiver's delivery controls (issue 23; CONTRACT.md endpoint fields): a rate limit in
 * messages a second, per-shipment ordering, custom headers (one sealed JSON object: values are
 * encrypted at rest), and the pause a receiver's Retry-After sets. The engine reads them through
 * its claim; this migration only adds the columns.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE webhook_endpoints
      ADD COLUMN rate_limit integer CHECK (rate_limit BETWEEN 1 AND 10000),
      ADD COLUMN ordering text NOT NULL DEFAULT 'none' CHECK (ordering IN ('none', 'per_shipment')),
      ADD COLUMN headers_sealed text,
      ADD COLUMN paused_until timestamptz`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE webhook_endpoints DROP COLUMN paused_until, DROP COLUMN headers_sealed,
      DROP COLUMN ordering, DROP COLUMN rate_limit`,
  ]);
}

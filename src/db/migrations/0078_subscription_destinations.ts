import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * App subscriptions delivering to a broker (issue 43, decision 0072): a version's manifest keeps
 * each broker destination with its password masked, and the version keeps the destinations
 * themselves here, each sealed as an endpoint's `destination_sealed` (a JSON array by subscription
 * index, null for an HTTPS one), for every installation's target to carry. A global table: no
 * tenant key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE app_versions ADD COLUMN destinations_sealed text']);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE app_versions DROP COLUMN destinations_sealed']);
}

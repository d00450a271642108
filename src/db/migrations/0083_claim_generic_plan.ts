import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 41 item 2: the claim on one PostgreSQL keeps one plan for every call, as the fan-out has
 * since migration 0080.
 *
 * PL/pgSQL plans each statement of a function on its first calls with the arguments' values (a
 * custom plan) and then compares those plans' cost with a generic one's. The claim's statements
 * take arrays and times whose values change nothing in their plans (index descents by target,
 * the due rows of each in time order, the lease by row address), but the estimates made from
 * them kept the custom plans, so every claim was planned anew: measured with the backend's own
 * CPU over 20,000 claimed rows, 64 a call, 1.72 to 1.76 ms a call against 1.53 to 1.57 with one
 * generic plan (11 % of the claim). The record function gained nothing measurable and is left
 * as it is. The Citus twin (`webhook_claim_tenant`) is left too: there Citus plans each call
 * for its company's shard.
 *
 * `CREATE OR REPLACE FUNCTION` drops the setting: a later migration that replaces the claim sets
 * it again (test/operations/database-functions.test.ts reads it).
 */
const CLAIM = 'webhook_claim(text, timestamptz, timestamptz, int, int, text[], int[], text, int, text[])';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [`ALTER FUNCTION ${CLAIM} SET plan_cache_mode TO 'force_generic_plan'`]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [`ALTER FUNCTION ${CLAIM} RESET plan_cache_mode`]);
}

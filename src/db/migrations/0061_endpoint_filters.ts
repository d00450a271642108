import type { Kysely } from 'kysely';
import { deliveriesInsert, GRANT_ALLOWS } from './0033_installation_grants.ts';
import { setSearchPath } from './0040_function_search_path.ts';
import { fanOutInOrder } from './0041_ordering_per_shipment.ts';
import { runStatements } from './sql.ts';

/**
 * Filters on endpoints (issue 32 item 3, decision 0051). An endpoint keeps its filter as written
 * (`filter`, shown back) and compiled (`filter_path`, an SQL/JSON path predicate, and
 * `filter_vars`, the values it names), made by src/modules/webhooks/filter.ts when it is saved.
 * The fan-out evaluates the predicate on the stored envelope: an event the filter leaves out makes
 * no delivery row. `silent => true` makes an evaluation error false instead of an error, so no
 * event can make the fan-out throw; the envelope is read by key, only for endpoints with a filter.
 */
export const FILTER_HOLDS = `e.filter_path IS NULL OR EXISTS (
    SELECT 1 FROM events stored
    WHERE stored.id = ev.id
      AND jsonb_path_match(stored.payload::jsonb, e.filter_path, COALESCE(e.filter_vars, '{}'::jsonb), true) IS TRUE
  )`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE webhook_endpoints ADD COLUMN filter jsonb, ADD COLUMN filter_path jsonpath, ADD COLUMN filter_vars jsonb',
    fanOutInOrder(deliveriesInsert(`(${GRANT_ALLOWS}) AND (${FILTER_HOLDS})`)),
  ]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    fanOutInOrder(deliveriesInsert(GRANT_ALLOWS)),
    'ALTER TABLE webhook_endpoints DROP COLUMN filter, DROP COLUMN filter_path, DROP COLUMN filter_vars',
  ]);
  await setSearchPath(db, true);
}

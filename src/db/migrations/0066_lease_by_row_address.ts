import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { CLAIM } from './0041_ordering_per_shipment.ts';
import { runStatements } from './sql.ts';

/**
 * The claim's lease finds its rows by their address (issue 34, decision 0060). The rows it leases
 * are the ones its choice just locked (FOR UPDATE), so their `ctid` cannot move before the lease's
 * update in the same statement: a TID scan instead of one probe of the primary key per row (the
 * lease was a fifth of the claim's time in `auto_explain`).
 */
const EDITS: Array<[string, string]> = [
  ['  ids text[];\n', '  ids text[];\n  leased tid[];\n'],
  [
    'SELECT array_agg(c.delivery_id), array_agg(c.delivery_id) FILTER (WHERE c.in_line) INTO ids, lined FROM (\n      SELECT x.delivery_id, x.in_line',
    'SELECT array_agg(c.delivery_id), array_agg(c.delivery_id) FILTER (WHERE c.in_line), array_agg(c.row_address)\n      INTO ids, lined, leased FROM (\n      SELECT x.delivery_id, x.in_line, x.row_address',
  ],
  [
    'SELECT q.delivery_id, q.shipment_id IS NOT NULL AS in_line FROM webhook_queue q',
    'SELECT q.delivery_id, q.shipment_id IS NOT NULL AS in_line, q.ctid AS row_address FROM webhook_queue q',
  ],
  [
    '    -- By primary key: a plan kept without the values must not read the whole queue.\n    UPDATE webhook_queue q SET locked_by = p_worker, locked_until = p_lease_until WHERE q.delivery_id = ANY (ids);',
    '    -- By the addresses of the rows locked above (a TID scan, whatever the plan kept).\n    UPDATE webhook_queue q SET locked_by = p_worker, locked_until = p_lease_until WHERE q.ctid = ANY (leased);',
  ],
];

export function claimLeasingByAddress(): string {
  let claim = CLAIM.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION');
  for (const [before, after] of EDITS) {
    if (!claim.includes(before))
      throw new Error(`migration 0066: the claim of 0041 has changed (${before.trim()})`);
    claim = claim.replace(before, after);
  }
  return claim;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [claimLeasingByAddress()]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [CLAIM.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION')]);
  await setSearchPath(db, true);
}

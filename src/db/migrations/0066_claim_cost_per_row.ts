import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { CLAIM } from './0041_ordering_per_shipment.ts';
import { runStatements } from './sql.ts';

/**
 * What the claim costs per row it takes (issue 34, decision 0060), seen with `auto_explain` on a
 * claim of 53 rows: the lease 0.39 ms, the rows returned 0.86 ms, the rest 0.3 ms.
 * - The lease finds its rows by their address. They are the rows the choice just locked (FOR
 *   UPDATE), so their `ctid` cannot move before the lease's update in the same call: a TID scan
 *   instead of one probe of the primary key per row.
 * - Without a rate-limited target among them, the rows are returned without the window that
 *   spaces a limited target's send times and the sorts it needs (0.35 ms of the 0.86). Reading
 *   each target once instead of once per row was tried: the planner kept the probe per row.
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

const RETURN_LIMITED = '    RETURN QUERY\n      SELECT d.id, d.endpoint_id';

/** Without a rate limit among the claimed targets: no send times to space. */
const RETURN_UNLIMITED = `    IF lim_ids IS NULL THEN
      RETURN QUERY
        SELECT d.id, d.endpoint_id, d.event_id, d.event_type,
          COALESCE(d.payload, (SELECT ev.payload FROM events ev WHERE ev.id = d.event_id)), d.status,
          d.attempt_count, d.next_attempt_at,
          t.kind, t.url, t.secret_sealed, t.previous_secret_sealed, t.previous_secret_expires_at, t.failing_since,
          t.headers_sealed, NULL::timestamptz,
          lined IS NOT NULL AND d.id = ANY (lined),
          last_walked, ended
        FROM unnest(ids) WITH ORDINALITY AS i(id, n)
        JOIN webhook_deliveries d ON d.id = i.id
        JOIN delivery_targets t ON t.id = d.endpoint_id
        ORDER BY i.n;
    ELSE
`;

export function claimCheaperPerRow(): string {
  let claim = CLAIM.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION');
  const edits: Array<[string, string]> = [
    ...EDITS,
    [RETURN_LIMITED, RETURN_UNLIMITED + RETURN_LIMITED],
    [
      '      ORDER BY i.n;\n  END IF;\n  IF ids IS NULL OR NOT FOUND',
      '      ORDER BY i.n;\n    END IF;\n  END IF;\n  IF ids IS NULL OR NOT FOUND',
    ],
  ];
  for (const [before, after] of edits) {
    if (!claim.includes(before))
      throw new Error(`migration 0066: the claim of 0041 has changed (${before.trim()})`);
    claim = claim.replace(before, after);
  }
  return claim;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [claimCheaperPerRow()]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [CLAIM.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION')]);
  await setSearchPath(db, true);
}

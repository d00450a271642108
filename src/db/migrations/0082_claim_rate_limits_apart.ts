import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { claimFunction, RATE_LIMIT_STEP } from './0080_delivery_rows.ts';
import { runStatements } from './sql.ts';

/**
 * Issue 42, decision 0076: the claim reads and locks its rate-limited targets' arrival times
 * without a data-modifying CTE.
 *
 * Migration 0080's claim locked them with `WITH locked AS (INSERT ... ON CONFLICT DO UPDATE ...
 * RETURNING) SELECT ... FROM locked`, on every claim, whether or not a target walked had a limit.
 * Citus plans a CTE that writes as a subplan: its rows go to an intermediate result over a
 * connection of their own, and the transaction commits in two phases. Run on a worker node (the
 * claim's twin is a distributed function there, decision 0076), that connection is a new one
 * each time, since Citus keeps no connections in a backend serving another node: a claim cost
 * the node 13 to 16 ms of CPU instead of 3.5 to 4.
 *
 * Now the claim asks first whether a target walked has a limit (one read, no write, for most
 * claims); then creates the targets' missing rows (`ON CONFLICT DO NOTHING`) and reads and locks
 * those whose second ahead is not given out yet (`FOR UPDATE`, in target order), two statements
 * each routed to one shard. On one PostgreSQL as well: a claim no longer writes a new version of
 * every limited target's row only to lock it. The rest of the function is migration 0080's text.
 */
const LOCK_BY_READING = (t: (alias: string) => string) => `    PERFORM 1 FROM webhook_endpoints en
      WHERE en.id = ANY (walked) AND en.rate_limit IS NOT NULL${t('en')} LIMIT 1;
    IF FOUND THEN
      INSERT INTO webhook_rate_state (endpoint_id, tenant_id, tat)
        SELECT en.id, en.tenant_id, NULL FROM webhook_endpoints en
        WHERE en.id = ANY (walked) AND en.rate_limit IS NOT NULL${t('en')}
        ORDER BY en.id
      ON CONFLICT (endpoint_id, tenant_id) DO NOTHING;
      SELECT array_agg(st.endpoint_id), array_agg(st.start), array_agg(st.step),
        array_agg(GREATEST(0, floor(extract(epoch FROM (p_now + interval '1 second' - st.start))
          / extract(epoch FROM st.step)))::int)
      INTO lim_ids, lim_start, lim_step, lim_allow
      FROM (
        SELECT s.endpoint_id, GREATEST(s.tat, p_now + interval '100 milliseconds') AS start,
          make_interval(secs => 1.0::double precision / (en.rate_limit * 0.9)) AS step
        FROM webhook_rate_state s
        JOIN webhook_endpoints en ON en.id = s.endpoint_id AND en.tenant_id = s.tenant_id${t('en')}
        WHERE s.endpoint_id = ANY (walked) AND en.rate_limit IS NOT NULL${t('s')}
          AND (s.tat IS NULL OR s.tat < p_now + interval '1 second'
            - make_interval(secs => 1.0::double precision / (en.rate_limit * 0.9)))
        ORDER BY s.endpoint_id
        FOR UPDATE OF s
      ) st;
    END IF;
`;

/** Migration 0080's claim (or its twin), as it was or with its rate-limit step read, not written. */
export function claim(perTenant: boolean, readLimits: boolean): string {
  const t = (alias: string) => (perTenant ? ` AND ${alias}.tenant_id = p_tenant` : '');
  const text = claimFunction(perTenant).replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION');
  if (!readLimits) return text;
  return text.replace(RATE_LIMIT_STEP(t), LOCK_BY_READING(t));
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [claim(false, true), claim(true, true)]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [claim(false, false), claim(true, false)]);
  await setSearchPath(db, true);
}

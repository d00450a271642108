import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { FAN_OUT, fanOutWith } from './0062_app_subscriptions.ts';
import { runStatements } from './sql.ts';

/**
 * The subscriptions' fan-out reaches an event's installations through its company (issue 32 item
 * 6, decision 0055). Migration 0062's join let the planner start from every subscription target of
 * every app and hash them against the events' companies: with 10,000 installations each
 * transaction read them all (28 events/s on the embedded engine, against 1,005 for plain
 * endpoints). The grants, then their targets, are now looked up in LATERAL subqueries, each
 * fenced with `OFFSET 0` so it is not flattened back and the join order is fixed: per event an
 * index probe on `installations (tenant_id)` for its company, then the targets of those
 * installations by `installation_id`, whatever the statistics say (without them the planner
 * thought there were 26 targets and crossed every event with all 10,000). The check that skips
 * companies without subscriptions goes from the companies too. Same rows, same conditions.
 */
export const SUBSCRIPTIONS_INSERT = `INSERT INTO webhook_deliveries
    (id, endpoint_id, event_id, event_type, payload, status, attempt_count, next_attempt_at, created_at, updated_at)
  SELECT
    'dlv_' || stamp || substr(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 14),
    e.id, ev.id, ev.type,
    '{"installation_id":' || to_json(g.installation_id)::text || ',' || substr(stored.payload, 2),
    'pending', 0, p_now, p_now, p_now
  FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts)
    AS ev(id, type, tenant_id, livemode, customer_account_id)
  CROSS JOIN LATERAL (
    SELECT grants.installation_id FROM installation_grants grants
    JOIN installations inst ON inst.id = grants.installation_id
    WHERE grants.tenant_id = ev.tenant_id
      AND grants.held_reason IS NULL
      AND (grants.customer_account_id IS NULL OR grants.customer_account_id = ev.customer_account_id)
      AND scopes_allow(grants.scopes, event_type_scope(ev.type))
      AND NOT (inst.muted_event_types @> jsonb_build_array(ev.type))
    OFFSET 0
  ) g
  CROSS JOIN LATERAL (
    SELECT t.id, t.filter_path, t.filter_vars FROM webhook_endpoints t
    WHERE t.kind = 'subscription'
      AND t.installation_id = g.installation_id
      AND t.livemode = ev.livemode
      AND t.enabled
      AND t.event_types @> jsonb_build_array(ev.type)
    OFFSET 0
  ) e
  JOIN events stored ON stored.id = ev.id
  WHERE e.filter_path IS NULL
    OR jsonb_path_match(stored.payload::jsonb, e.filter_path, COALESCE(e.filter_vars, '{}'::jsonb), true) IS TRUE`;

/** Whether any of the events' companies has an app with subscriptions: from the companies too. */
export const SUBSCRIBED_PRECHECK = `EXISTS (SELECT 1 FROM installations i
    CROSS JOIN LATERAL (
      SELECT 1 FROM webhook_endpoints s WHERE s.installation_id = i.id AND s.kind = 'subscription' OFFSET 0 LIMIT 1
    ) s
    WHERE i.tenant_id = ANY (p_tenants))`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [fanOutWith(SUBSCRIPTIONS_INSERT, SUBSCRIBED_PRECHECK)]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [FAN_OUT]);
  await setSearchPath(db, true);
}

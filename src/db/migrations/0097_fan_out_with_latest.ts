import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { FAN_OUT, FAN_OUT_ENDPOINTS, fanOutFunction } from './0080_delivery_rows.ts';
import { claim as claimOf0082 } from './0082_claim_rate_limits_apart.ts';
import { runStatements } from './sql.ts';

/**
 * Issue 51, decision 0081: an event's 2026-12-01 message is written once, beside its 2026-11-01
 * one, and each target's filter is evaluated on the envelope of its own version.
 *
 * - `events.latest_payload`: the 2026-12-01 envelope of an event that has both (null where the
 *   event row's `payload` is already that version's: a type only 2026-12-01 has, or an event of
 *   before this migration).
 * - `webhook_deliveries.api_version`: '2026-12-01' on a delivery of a target pinned to it whose
 *   event has a `latest_payload`, which it then sends (`deliveryPayload`, the claim); null where it
 *   sends its own `payload` or its event's.
 * - The fan-out functions take one more array, `p_latest` (those envelopes), so that a pinned
 *   target's filter reads the 2026-12-01 envelope from the call and every other target's the
 *   stored one, from `events` by key and only when a filter needs it. An app subscription's row
 *   keeps its copy behind the installation's head, now of its version.
 *
 * Until now the copies were written into each pinned target's delivery row by an UPDATE after
 * the fan-out (one more statement a batch, reading back what was just inserted, and a message's
 * bytes once per target instead of once per event), and filters named only the stored envelope's
 * paths. The rest of each function is migration 0080's (the claim 0082's) text.
 */
const OLD_ARGS = 'text[], text[], text[], boolean[], text[], timestamptz';

const LATEST = "CASE WHEN e.api_version = '2026-12-01' THEN ev.latest END";
/** The version a delivery row notes: the target's, where its event has a message of it. */
const ROW_VERSION = "CASE WHEN e.api_version = '2026-12-01' AND ev.latest IS NOT NULL THEN '2026-12-01' END";

/** Every place of `from` (a function writes its insert twice: with and without lines to join). */
function replaceEvery(text: string, from: string, to: string): string {
  if (!text.includes(from))
    throw new Error(`migration 0097: the text to replace is not in migration 0080's: ${from}`);
  return text.split(from).join(to);
}

function withLatest(text: string): string {
  let out = text;
  out = replaceEvery(
    out,
    'p_accounts text[], p_now timestamptz)',
    'p_accounts text[], p_latest text[], p_now timestamptz)',
  );
  // The call of the endpoints' function, which only webhook_fan_out makes.
  out = out.replace('p_livemodes, p_accounts, p_now)', 'p_livemodes, p_accounts, p_latest, p_now)');
  out = replaceEvery(
    out,
    'INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, payload, status,',
    'INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, payload, api_version, status,',
  );
  out = replaceEvery(
    out,
    'FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts)\n      AS ev(id, type, tenant_id, livemode, customer_account_id)',
    'FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts, p_latest)\n      AS ev(id, type, tenant_id, livemode, customer_account_id, latest)',
  );
  return out;
}

/** The endpoints' rows: no copy, the version noted, each filter on its version's envelope. */
function endpointsFunction(): string {
  let out = withLatest(FAN_OUT_ENDPOINTS);
  out = replaceEvery(
    out,
    "e.id, ev.id, ev.type, NULL, 'pending'",
    `e.id, ev.id, ev.type, NULL, ${ROW_VERSION}, 'pending'`,
  );
  out = replaceEvery(
    out,
    `AND (e.filter_path IS NULL OR EXISTS (
      SELECT 1 FROM events stored
      WHERE stored.id = ev.id/*T:stored*/
        AND jsonb_path_match(stored.payload::jsonb, e.filter_path, COALESCE(e.filter_vars, '{}'::jsonb), true) IS TRUE
    ))`,
    `AND (e.filter_path IS NULL OR jsonb_path_match(
      COALESCE(${LATEST}, (SELECT stored.payload FROM events stored WHERE stored.id = ev.id/*T:stored*/))::jsonb,
      e.filter_path, COALESCE(e.filter_vars, '{}'::jsonb), true) IS TRUE)`,
  );
  return out;
}

/** The subscriptions' rows: the same, behind the installation's head. */
function fanOut(): string {
  let out = withLatest(FAN_OUT);
  out = replaceEvery(
    out,
    "substr(stored.payload, 2),\n      'pending'",
    `substr(COALESCE(${LATEST}, stored.payload), 2), ${ROW_VERSION},\n      'pending'`,
  );
  out = replaceEvery(
    out,
    'SELECT t.id, t.tenant_id, t.filter_path, t.filter_vars FROM webhook_endpoints t',
    'SELECT t.id, t.tenant_id, t.filter_path, t.filter_vars, t.api_version FROM webhook_endpoints t',
  );
  out = replaceEvery(
    out,
    'OR jsonb_path_match(stored.payload::jsonb,',
    `OR jsonb_path_match(COALESCE(${LATEST}, stored.payload)::jsonb,`,
  );
  return out;
}

/** The claim (or its twin) returns what each delivery sends: its own, or its event's of its version. */
function claim(perTenant: boolean): string {
  let out = claimOf0082(perTenant, true);
  out = replaceEvery(
    out,
    'RETURNING q.id, q.tenant_id, q.endpoint_id, q.event_id, q.event_type, q.payload, q.status,',
    'RETURNING q.id, q.tenant_id, q.endpoint_id, q.event_id, q.event_type, q.payload, q.api_version, q.status,',
  );
  out = replaceEvery(
    out,
    'COALESCE(d.payload, (SELECT ev.payload FROM events ev',
    'COALESCE(d.payload, (SELECT CASE WHEN d.api_version IS NULL THEN ev.payload ELSE ev.latest_payload END FROM events ev',
  );
  return out;
}

const CLAIM = 'webhook_claim(text, timestamptz, timestamptz, int, int, text[], int[], text, int, text[])';
/** Migration 0083's setting, which `CREATE OR REPLACE` drops. */
const CLAIM_PLAN = `ALTER FUNCTION ${CLAIM} SET plan_cache_mode TO 'force_generic_plan'`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE events ADD COLUMN latest_payload text',
    'ALTER TABLE webhook_deliveries ADD COLUMN api_version text',
    `DROP FUNCTION webhook_fan_out(${OLD_ARGS})`,
    `DROP FUNCTION webhook_fan_out_tenant(text, ${OLD_ARGS})`,
    `DROP FUNCTION webhook_fan_out_endpoints(${OLD_ARGS})`,
    `DROP FUNCTION webhook_fan_out_endpoints_tenant(text, ${OLD_ARGS})`,
    fanOutFunction(endpointsFunction(), false),
    fanOutFunction(endpointsFunction(), true),
    fanOutFunction(fanOut(), false),
    fanOutFunction(fanOut(), true),
    claim(false),
    claim(true),
    CLAIM_PLAN,
  ]);
  await setSearchPath(db, true);
}

/** Back to 0080's functions: a pinned delivery still queued then sends its event's 2026-11-01 envelope. */
export async function down(db: Kysely<unknown>): Promise<void> {
  const NEW_ARGS = 'text[], text[], text[], boolean[], text[], text[], timestamptz';
  await runStatements(db, [
    `DROP FUNCTION webhook_fan_out(${NEW_ARGS})`,
    `DROP FUNCTION webhook_fan_out_tenant(text, ${NEW_ARGS})`,
    `DROP FUNCTION webhook_fan_out_endpoints(${NEW_ARGS})`,
    `DROP FUNCTION webhook_fan_out_endpoints_tenant(text, ${NEW_ARGS})`,
    fanOutFunction(FAN_OUT_ENDPOINTS, false),
    fanOutFunction(FAN_OUT_ENDPOINTS, true),
    fanOutFunction(FAN_OUT, false),
    fanOutFunction(FAN_OUT, true),
    claimOf0082(false, true),
    claimOf0082(true, true),
    CLAIM_PLAN,
    'ALTER TABLE webhook_deliveries DROP COLUMN api_version',
    'ALTER TABLE events DROP COLUMN latest_payload',
  ]);
  await setSearchPath(db, true);
}

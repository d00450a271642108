import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * An installation's endpoints follow its grant (issue 22, items 3 and 4; decision 0024). The rule
 * "what may an installation receive" lives here, in the database, once: every path that sends to
 * an installation reads it (the fan-out below, operational events, privacy messages, replays and
 * test sends through src/modules/oauth/installation-grants.ts).
 *
 * - `role_scopes(role)`: the scopes a company role holds (the table of roles.ts, which a test keeps
 *   equal to this one).
 * - `event_type_scope(type)`: the scope a type needs. Shipment events and the privacy messages
 *   carry the shipment and its recipient: `shipments:read`. Operational events are about endpoints:
 *   `webhooks:read`. `app.uninstalled` needs none (it follows the end of the grant).
 * - `scopes_allow(scopes, needed)`: as `allows` in roles.ts, a write scope includes reading.
 * - the view `installation_grants`: per installation, why it receives nothing (`held_reason`:
 *   `app_suspended`, or `needs_approval` when the approver left the company or was moved to
 *   another merchant account), and the scopes in force: those granted that the approver's role
 *   holds now, as an app token of theirs would have them.
 */
const ROLE_SCOPES = `CREATE FUNCTION role_scopes(p_role text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT CASE p_role
    WHEN 'owner' THEN ARRAY['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write']
    WHEN 'admin' THEN ARRAY['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write']
    WHEN 'member' THEN ARRAY['shipments:read', 'shipments:write']
    WHEN 'viewer' THEN ARRAY['shipments:read']
    WHEN 'merchant_admin' THEN ARRAY['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write']
    WHEN 'merchant_member' THEN ARRAY['shipments:read', 'shipments:write']
    ELSE ARRAY[]::text[]
  END
$fn$`;

const EVENT_TYPE_SCOPE = `CREATE FUNCTION event_type_scope(p_type text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT CASE
    WHEN p_type = 'app.uninstalled' THEN NULL
    WHEN p_type LIKE 'webhook\\_endpoint.%' THEN 'webhooks:read'
    -- Shipment events, customer.data_request, customer.redact, and whatever comes next unless
    -- listed above: the shipment and its recipient.
    ELSE 'shipments:read'
  END
$fn$`;

const SCOPES_ALLOW = `CREATE FUNCTION scopes_allow(p_scopes text[], p_needed text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT p_needed IS NULL OR p_needed = ANY (p_scopes)
    OR (p_needed = 'shipments:read' AND 'shipments:write' = ANY (p_scopes))
    OR (p_needed = 'webhooks:read' AND 'webhooks:write' = ANY (p_scopes))
$fn$`;

const GRANTS_VIEW = `CREATE VIEW installation_grants AS
  SELECT i.id AS installation_id, i.app_id, i.tenant_id, i.customer_account_id, i.user_id AS approved_by,
    CASE
      WHEN a.status = 'suspended' THEN 'app_suspended'
      WHEN m.user_id IS NULL THEN 'needs_approval'
      WHEN m.customer_account_id IS NOT NULL AND m.customer_account_id IS DISTINCT FROM i.customer_account_id
        THEN 'needs_approval'
    END AS held_reason,
    CASE WHEN m.user_id IS NULL THEN ARRAY[]::text[] ELSE ARRAY(
      SELECT s FROM unnest(role_scopes(m.role)) AS s WHERE i.scopes @> jsonb_build_array(s)
    ) END AS scopes
  FROM installations i
  JOIN apps a ON a.id = i.app_id
  LEFT JOIN memberships m ON m.tenant_id = i.tenant_id AND m.user_id = i.user_id`;

/** The condition on installations' endpoints of migrations 0017 and 0018: not of a suspended app. */
const NOT_SUSPENDED = `e.installation_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM installations i JOIN apps a ON a.id = i.app_id
    WHERE i.id = e.installation_id AND a.status = 'suspended'
  )`;

/** This migration's: the grant is in force and its scopes allow the type. */
export const GRANT_ALLOWS = `e.installation_id IS NULL OR EXISTS (
    SELECT 1 FROM installation_grants g
    WHERE g.installation_id = e.installation_id AND g.held_reason IS NULL
      AND scopes_allow(g.scopes, event_type_scope(ev.type))
  )`;

/**
 * The fan-out's insert (time-ordered ids, migration 0018; no payload, migration 0016): a delivery
 * for each event and each endpoint of its tenant and livemode that is enabled, subscribed to its
 * type, in its scope and passes the condition on installations' endpoints. Migration 0041 uses it
 * again.
 */
export function deliveriesInsert(installationCondition: string): string {
  return `INSERT INTO webhook_deliveries
    (id, endpoint_id, event_id, event_type, payload, status, attempt_count, next_attempt_at, created_at, updated_at)
  SELECT
    -- dlv_ + the time in 8 characters + 14 characters of [0-9A-Za-z] (migration 0018).
    'dlv_' || stamp || substr(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 14),
    -- No payload: the delivery reads its event's (migration 0016).
    e.id, ev.id, ev.type, NULL, 'pending', 0, p_now, p_now, p_now
  FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts)
    AS ev(id, type, tenant_id, livemode, customer_account_id)
  JOIN webhook_endpoints e
    ON e.tenant_id = ev.tenant_id
    AND e.livemode = ev.livemode
    AND e.enabled
    AND e.event_types @> jsonb_build_array(ev.type)
    AND (e.customer_account_id IS NULL OR e.customer_account_id = ev.customer_account_id)
  WHERE ${installationCondition}`;
}

/**
 * The fan-out as migration 0018 left it (time-ordered ids), with the condition on installations'
 * endpoints given: an endpoint of an installation receives an event only while the grant is in
 * force and its scopes allow the type.
 */
export function fanOut(installationCondition: string): string {
  return `CREATE OR REPLACE FUNCTION webhook_fan_out(p_event_ids text[], p_types text[], p_tenants text[],
  p_livemodes boolean[], p_accounts text[], p_now timestamptz)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  inserted int;
  stamp text := waybill_id_time(clock_timestamp());
BEGIN
  ${deliveriesInsert(installationCondition)};
  GET DIAGNOSTICS inserted = ROW_COUNT;
  RETURN inserted;
END
$fn$`;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [ROLE_SCOPES, EVENT_TYPE_SCOPE, SCOPES_ALLOW, GRANTS_VIEW, fanOut(GRANT_ALLOWS)]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    fanOut(NOT_SUSPENDED),
    'DROP VIEW installation_grants',
    'DROP FUNCTION scopes_allow(text[], text)',
    'DROP FUNCTION event_type_scope(text)',
    'DROP FUNCTION role_scopes(text)',
  ]);
}

import type { Kysely } from 'kysely';
import { deliveriesInsert, GRANT_ALLOWS } from './0033_installation_grants.ts';
import { setSearchPath } from './0040_function_search_path.ts';
import {
  fanOutInOrder,
  TARGETS_VIEW as TARGETS_VIEW_BEFORE_SUBSCRIPTIONS,
} from './0041_ordering_per_shipment.ts';
import { FILTER_HOLDS } from './0061_endpoint_filters.ts';
import { runStatements } from './sql.ts';

/**
 * App subscriptions on the one delivery engine (issue 32 item 2, decision 0053). Each subscription
 * of an app's active version is a target row per installation and mode (kind 'subscription',
 * `subscription_index`), kept in step by src/modules/apps/subscriptions.ts when a version is
 * released or an app installed, and removed with the installation (its foreign key). Its tenant is
 * NULL, like an app's events target, so nothing that lists a company's endpoints sees it; the
 * fan-out reaches it through the installation. It signs with the app's events secret and sends to
 * its own URL (delivery_targets).
 *
 * `webhook_fan_out` now runs the endpoints' insert of migration 0061 and then the subscriptions'
 * one, in the same call: for each event, every subscription target of an installation of the
 * event's company whose grant is in force and allows the type, of the event's mode, subscribed to
 * the type, in the installation's merchant account when it has one, not muted by the app for that
 * installation (`installations.muted_event_types`), and whose filter holds. Each
 * delivery keeps its own payload: the event's envelope with `installation_id` first.
 */
const COLUMN = 'ALTER TABLE webhook_endpoints ADD COLUMN subscription_index integer';
/** Types the app asked not to receive for this installation (PATCH /v1/installation). */
const MUTED = "ALTER TABLE installations ADD COLUMN muted_event_types jsonb NOT NULL DEFAULT '[]'::jsonb";
const TARGETS_INDEX = `CREATE UNIQUE INDEX webhook_endpoints_subscriptions
  ON webhook_endpoints (installation_id, subscription_index, livemode) WHERE kind = 'subscription'`;

export const TARGETS_VIEW = `CREATE OR REPLACE VIEW delivery_targets AS
  SELECT e.id, e.kind, e.app_id, e.enabled, e.held, e.failing_since,
    CASE WHEN e.kind = 'app_events' THEN COALESCE(a.events_url, e.url) ELSE e.url END AS url,
    COALESCE(a.events_secret_sealed, e.secret_sealed) AS secret_sealed,
    CASE WHEN a.id IS NOT NULL THEN a.events_previous_secret_sealed ELSE e.previous_secret_sealed END
      AS previous_secret_sealed,
    CASE WHEN a.id IS NOT NULL THEN a.events_previous_secret_expires_at
      ELSE e.previous_secret_expires_at END AS previous_secret_expires_at,
    e.headers_sealed, e.ordering
  FROM webhook_endpoints e
  LEFT JOIN apps a ON e.kind IN ('app_events', 'subscription') AND a.id = e.app_id`;

const ENDPOINTS_FAN_OUT = fanOutInOrder(deliveriesInsert(`(${GRANT_ALLOWS}) AND (${FILTER_HOLDS})`));

export const SUBSCRIPTIONS_INSERT = `INSERT INTO webhook_deliveries
    (id, endpoint_id, event_id, event_type, payload, status, attempt_count, next_attempt_at, created_at, updated_at)
  SELECT
    'dlv_' || stamp || substr(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 14),
    e.id, ev.id, ev.type,
    '{"installation_id":' || to_json(g.installation_id)::text || ',' || substr(stored.payload, 2),
    'pending', 0, p_now, p_now, p_now
  FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts)
    AS ev(id, type, tenant_id, livemode, customer_account_id)
  JOIN installation_grants g
    ON g.tenant_id = ev.tenant_id
    AND g.held_reason IS NULL
    AND (g.customer_account_id IS NULL OR g.customer_account_id = ev.customer_account_id)
    AND scopes_allow(g.scopes, event_type_scope(ev.type))
  JOIN installations inst
    ON inst.id = g.installation_id
    AND NOT (inst.muted_event_types @> jsonb_build_array(ev.type))
  JOIN webhook_endpoints e
    ON e.kind = 'subscription'
    AND e.installation_id = g.installation_id
    AND e.livemode = ev.livemode
    AND e.enabled
    AND e.event_types @> jsonb_build_array(ev.type)
  JOIN events stored ON stored.id = ev.id
  WHERE e.filter_path IS NULL
    OR jsonb_path_match(stored.payload::jsonb, e.filter_path, COALESCE(e.filter_vars, '{}'::jsonb), true) IS TRUE`;

const SUBSCRIBED_PRECHECK = `EXISTS (SELECT 1 FROM installations i WHERE i.tenant_id = ANY (p_tenants) AND EXISTS (
      SELECT 1 FROM webhook_endpoints s WHERE s.installation_id = i.id AND s.kind = 'subscription'))`;

/** The fan-out of this migration, with the subscriptions' insert given (migration 0063 changes it). */
export const fanOutWith = (
  subscriptionsInsert: string,
  precheck = SUBSCRIBED_PRECHECK,
) => `CREATE OR REPLACE FUNCTION webhook_fan_out(p_event_ids text[], p_types text[], p_tenants text[],
  p_livemodes boolean[], p_accounts text[], p_now timestamptz)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  inserted int;
  subscribed int := 0;
  stamp text := waybill_id_time(clock_timestamp());
BEGIN
  inserted := webhook_fan_out_endpoints(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts, p_now);
  -- Subscriptions only where an app with subscriptions is installed: one index probe otherwise.
  IF ${precheck} THEN
    ${subscriptionsInsert};
    GET DIAGNOSTICS subscribed = ROW_COUNT;
  END IF;
  RETURN inserted + subscribed;
END
$fn$`;

export const FAN_OUT = fanOutWith(SUBSCRIPTIONS_INSERT);

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    COLUMN,
    MUTED,
    TARGETS_INDEX,
    TARGETS_VIEW,
    ENDPOINTS_FAN_OUT.replace('FUNCTION webhook_fan_out(', 'FUNCTION webhook_fan_out_endpoints('),
    FAN_OUT,
  ]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    "DELETE FROM webhook_endpoints WHERE kind = 'subscription'",
    ENDPOINTS_FAN_OUT,
    'DROP FUNCTION webhook_fan_out_endpoints(text[], text[], text[], boolean[], text[], timestamptz)',
    TARGETS_VIEW_BEFORE_SUBSCRIPTIONS,
    'DROP INDEX webhook_endpoints_subscriptions',
    'ALTER TABLE webhook_endpoints DROP COLUMN subscription_index',
    'ALTER TABLE installations DROP COLUMN muted_event_types',
  ]);
  await setSearchPath(db, true);
}

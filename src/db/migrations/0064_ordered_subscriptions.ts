import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { lineUpMade } from './0041_ordering_per_shipment.ts';
import { fanOutWith } from './0062_app_subscriptions.ts';
import { SUBSCRIBED_PRECHECK, SUBSCRIPTIONS_INSERT } from './0063_subscription_fanout_by_tenant.ts';
import { runStatements } from './sql.ts';

/**
 * Ordering per shipment for app subscriptions (issue 32 item 2, decision 0057). A subscription's
 * `ordering` is copied onto each installation's target (src/modules/apps/subscriptions.ts), and
 * the subscriptions' fan-out of migration 0063 (same insert: from the event's company, fenced
 * LATERAL) now gives the messages made for an ordered target their shipment and their place in
 * its line, as migration 0041's does for a company's endpoints (whose check goes by tenant: a
 * subscription target has none). The queue's trigger and the claim go by target and shipment
 * only, so they keep the order as they do for endpoints.
 *
 * The check whether any of the events' companies has an ordered subscription target goes from
 * the companies, by this partial index: almost always there is none, and then the insert runs as
 * before.
 */
const ORDERED_TARGETS_INDEX = `CREATE INDEX webhook_endpoints_ordered_subscriptions
  ON webhook_endpoints (installation_id) WHERE kind = 'subscription' AND ordering = 'per_shipment'`;

// First one probe of the partial index (empty unless some app orders a subscription), then from
// the events' companies, each by key: an EXISTS that is false reads every row it may, so a scan
// of the installations here cost 40% of the fan-out's rate (bench:apps, 10,000 installations).
const ORDERED_PRECHECK = `EXISTS (SELECT 1 FROM webhook_endpoints WHERE kind = 'subscription' AND ordering = 'per_shipment')
    AND EXISTS (SELECT 1 FROM unnest(p_tenants) AS ev(tenant_id)
    CROSS JOIN LATERAL (
      SELECT 1 FROM installations i
      JOIN webhook_endpoints s ON s.installation_id = i.id
      WHERE i.tenant_id = ev.tenant_id AND s.kind = 'subscription' AND s.ordering = 'per_shipment'
      OFFSET 0 LIMIT 1
    ) s)`;

/** Migration 0063's insert; for an ordered target, its messages join their shipments' lines. */
const SUBSCRIPTIONS_INSERT_IN_ORDER = `IF NOT ${ORDERED_PRECHECK} THEN
      ${SUBSCRIPTIONS_INSERT};
      GET DIAGNOSTICS subscribed = ROW_COUNT;
    ELSE
      ${lineUpMade(SUBSCRIPTIONS_INSERT, 'subscribed')}
    END IF`;

/** The fan-out of migration 0062 (endpoints, then subscriptions), with the insert above. */
const FAN_OUT = `CREATE OR REPLACE FUNCTION webhook_fan_out(p_event_ids text[], p_types text[], p_tenants text[],
  p_livemodes boolean[], p_accounts text[], p_now timestamptz)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  inserted int;
  subscribed int := 0;
  stamp text := waybill_id_time(clock_timestamp());
  lined_ids text[];
  lined_shipments text[];
BEGIN
  inserted := webhook_fan_out_endpoints(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts, p_now);
  -- Subscriptions only where an app with subscriptions is installed: one index probe otherwise.
  IF ${SUBSCRIBED_PRECHECK} THEN
    ${SUBSCRIPTIONS_INSERT_IN_ORDER};
  END IF;
  RETURN inserted + subscribed;
END
$fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [ORDERED_TARGETS_INDEX, FAN_OUT]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    fanOutWith(SUBSCRIPTIONS_INSERT, SUBSCRIBED_PRECHECK),
    'DROP INDEX webhook_endpoints_ordered_subscriptions',
  ]);
  await setSearchPath(db, true);
}

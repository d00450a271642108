import type { Kysely } from 'kysely';
import { TARGETS_VIEW as TARGETS_VIEW_BEFORE } from './0062_app_subscriptions.ts';
import { runStatements } from './sql.ts';

/**
 * Destinations (issue 43, decision 0072): an endpoint may deliver to a message broker. The
 * broker's destination (type, URL with its credentials, exchange and routing key, or subject) is
 * sealed whole in `destination_sealed`; `url` keeps the broker URL with its password masked, for
 * answers, pages and operational events. The engine reads a target through delivery_targets: for
 * a broker its `url` is the sealed destination behind a prefix the sender recognises
 * (delivery/destinations), so the claim and the attempt keep their columns and a change of the
 * destination is a new sealed text (a worker's connection to the old one is not reused).
 */
const COLUMN = 'ALTER TABLE webhook_endpoints ADD COLUMN destination_sealed text';

export const DESTINATION_PREFIX = 'waybill-destination:';

const URL_BEFORE = "CASE WHEN e.kind = 'app_events' THEN COALESCE(a.events_url, e.url) ELSE e.url END AS url";
const URL_AFTER = `CASE WHEN e.destination_sealed IS NOT NULL THEN '${DESTINATION_PREFIX}' || e.destination_sealed
      WHEN e.kind = 'app_events' THEN COALESCE(a.events_url, e.url) ELSE e.url END AS url`;

function targetsView(): string {
  if (!TARGETS_VIEW_BEFORE.includes(URL_BEFORE))
    throw new Error('migration 0070: the view of 0062 has changed');
  return TARGETS_VIEW_BEFORE.replace(URL_BEFORE, URL_AFTER);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [COLUMN, targetsView()]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    TARGETS_VIEW_BEFORE,
    'DELETE FROM webhook_endpoints WHERE destination_sealed IS NOT NULL',
    'ALTER TABLE webhook_endpoints DROP COLUMN destination_sealed',
  ]);
}

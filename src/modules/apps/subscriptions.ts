import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Trx } from '../../context.ts';
import { cancelQueued } from '../../delivery/lifecycle.ts';
import { applyOrdering } from '../../delivery/ordering.ts';
import { compileFilter } from '../webhooks/filter.ts';
import { type Manifest, subscriptionVersion } from './manifest.ts';
import { sealedDestinations } from './subscription-destination.ts';

/**
 * Whether installation `i` has targets of this mode: subscriptions are an app installation's (`v1`;
 * an `mcp` grant is an agent's access), and one in test mode gets sandbox events only (migration 0067).
 */
const inMode = (livemode: RawBuilder<unknown>) => sql`i.resource = 'v1' AND (i.livemode OR NOT ${livemode})`;

/**
 * Keeps the delivery engine's subscription targets (migration 0062) in step with the app's active
 * version: one row per installation, subscription and mode (live; sandbox too with `test_events`).
 * One statement for every installation of the app, however many: a row that exists is updated in
 * place (its waiting messages keep their place), a new one is made, and one whose subscription
 * the version no longer has is disabled (what waits for it is cancelled). Called in the
 * transaction of a release and of an installation's approval (`installation`: that one only,
 * named with its company, so that on Citus every statement runs in the company's shard).
 * Statements join endpoints and installations on the company too, as Citus's co-located joins
 * need (decision 0073).
 */
export async function syncSubscriptionTargets(
  trx: Trx,
  appId: string,
  now: Date,
  installation: { id: string; tenantId: string } | null = null,
): Promise<void> {
  const active = await trx
    .selectFrom('app_versions')
    .select(['manifest', 'destinations_sealed'])
    .where('app_id', '=', appId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  const manifest = (typeof active?.manifest === 'string' ? JSON.parse(active.manifest) : active?.manifest) as
    | Manifest
    | undefined;
  const destinations = sealedDestinations(active?.destinations_sealed ?? null);
  const rows = (manifest?.subscriptions ?? []).flatMap((subscription, index) => {
    // Checked when the version was made: compiling again cannot fail for the same types.
    const compiled = compileFilter(
      subscription.filter,
      subscription.event_types,
      `/subscriptions/${index}/filter`,
      subscriptionVersion(subscription),
    );
    return (subscription.test_events ? [true, false] : [true]).map((livemode) => ({
      index,
      livemode,
      url: subscription.url,
      // A broker destination sealed (migration 0078), carried as an endpoint's (delivery_targets).
      destinationSealed: destinations[index] ?? null,
      eventTypes: JSON.stringify(subscription.event_types),
      filter: subscription.filter ? JSON.stringify(subscription.filter) : null,
      path: compiled?.path ?? null,
      vars: compiled ? JSON.stringify(compiled.vars) : null,
      rateLimit: subscription.rate_limit ?? null,
      ordering: subscription.ordering ?? 'none',
      apiVersion: subscriptionVersion(subscription),
    }));
  });
  const at = now.toISOString();
  const onlyOne = installation
    ? sql`AND i.id = ${installation.id} AND i.tenant_id = ${installation.tenantId}`
    : sql``;
  if (rows.length > 0) {
    // A target whose ordering the version changes: its waiting messages join or leave their
    // shipments' lines at once, as an endpoint's do on PATCH.
    const { rows: before } = await sql<{
      id: string;
      tenant_id: string;
      idx: number;
      livemode: boolean;
      ordering: string;
    }>`
      SELECT e.id, e.tenant_id, e.subscription_index AS idx, e.livemode, e.ordering FROM webhook_endpoints e
      JOIN installations i ON i.id = e.installation_id AND i.tenant_id = e.tenant_id
      WHERE e.kind = 'subscription' AND i.app_id = ${appId} ${onlyOne}`.execute(trx);
    await sql`
      INSERT INTO webhook_endpoints (id, kind, app_id, tenant_id, customer_account_id, installation_id,
        livemode, url, event_types, enabled, secret_sealed, subscription_index, filter, filter_path,
        filter_vars, rate_limit, ordering, destination_sealed, api_version, created_at, updated_at)
      SELECT
        'we_' || waybill_id_time(clock_timestamp())
          || substr(translate(encode(uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 14),
        'subscription', i.app_id, i.tenant_id, i.customer_account_id, i.id, s.livemode, s.url,
        s.event_types::jsonb, true, a.events_secret_sealed, s.idx, s.filter::jsonb, s.path::jsonpath,
        s.vars::jsonb, s.rate_limit, s.ordering, s.destination_sealed, s.api_version, ${at}::timestamptz, ${at}::timestamptz
      FROM installations i
      JOIN apps a ON a.id = i.app_id
      CROSS JOIN unnest(
        ${rows.map((r) => r.index)}::int[], ${rows.map((r) => r.livemode)}::boolean[],
        ${rows.map((r) => r.url)}::text[], ${rows.map((r) => r.eventTypes)}::text[],
        ${rows.map((r) => r.filter)}::text[], ${rows.map((r) => r.path)}::text[],
        ${rows.map((r) => r.vars)}::text[], ${rows.map((r) => r.rateLimit)}::int[],
        ${rows.map((r) => r.ordering)}::text[], ${rows.map((r) => r.destinationSealed)}::text[],
        ${rows.map((r) => r.apiVersion)}::text[]
      ) AS s(idx, livemode, url, event_types, filter, path, vars, rate_limit, ordering, destination_sealed, api_version)
      WHERE i.app_id = ${appId} ${onlyOne} AND ${inMode(sql`s.livemode`)}
      ON CONFLICT (installation_id, subscription_index, livemode, tenant_id) WHERE kind = 'subscription' DO UPDATE SET
        url = excluded.url, event_types = excluded.event_types, filter = excluded.filter,
        filter_path = excluded.filter_path, filter_vars = excluded.filter_vars,
        rate_limit = excluded.rate_limit, ordering = excluded.ordering,
        destination_sealed = excluded.destination_sealed, api_version = excluded.api_version,
        -- Taken away by an earlier version (manual), now back; one disabled for failing stays so.
        enabled = webhook_endpoints.enabled OR webhook_endpoints.disabled_reason = 'manual',
        disabled_reason = CASE WHEN webhook_endpoints.disabled_reason = 'manual' THEN NULL
          ELSE webhook_endpoints.disabled_reason END,
        updated_at = excluded.updated_at`.execute(trx);
    const wanted = new Map(rows.map((r) => [`${r.index}:${r.livemode}`, r.ordering]));
    for (const target of before) {
      const ordering = wanted.get(`${target.idx}:${target.livemode}`);
      if (ordering && ordering !== target.ordering)
        await applyOrdering(trx, { id: target.id, tenantId: target.tenant_id }, ordering);
    }
  }
  const kept = rows.map((r) => `${r.index}:${r.livemode}`);
  // The casts spell what `||` would (`0:true`), but immutably: `text || anynonarray` is STABLE,
  // which Citus refuses on a column in an UPDATE of a distributed table.
  const { rows: removed } = await sql<{ id: string; tenant_id: string }>`
    UPDATE webhook_endpoints e SET enabled = false, disabled_reason = 'manual', updated_at = ${at}::timestamptz
    FROM installations i
    WHERE e.kind = 'subscription' AND e.installation_id = i.id AND e.tenant_id = i.tenant_id
      AND i.app_id = ${appId} ${onlyOne}
      AND e.enabled AND NOT ((e.subscription_index::text || ':' || e.livemode::text) = ANY (${kept}::text[])
        AND ${inMode(sql`e.livemode`)})
    RETURNING e.id, e.tenant_id`.execute(trx);
  if (removed.length > 0) {
    // Their companies named: on Citus, the shards of those companies only.
    const tenants = [...new Set(removed.map((r) => r.tenant_id))];
    await cancelQueued(
      trx,
      sql<SqlBool>`d.tenant_id = ANY (${tenants}::text[]) AND d.endpoint_id = ANY (${removed.map((r) => r.id)}::text[])`,
      now,
    );
  }
}

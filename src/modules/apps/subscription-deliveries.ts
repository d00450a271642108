import { sql } from 'kysely';
import { type AppContext, runAfterCommit } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { type AttemptOutcome, attemptDelivery } from '../../delivery/attempt.ts';
import type { WebhookDeliveriesTable } from '../../delivery/tables.ts';
import { addMs } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { allows, type Scope } from '../accounts/roles.ts';
import { spendOutbound } from '../outbound/budget.ts';
import { type Attempt, attemptsByDelivery, type Delivery, presentDelivery } from '../webhooks/deliveries.ts';
import { BULK_REPLAY_WINDOW_MS } from '../webhooks/replay.ts';
import { eventTypeScope, type Manifest } from './manifest.ts';
import { jsonArray, ownedAppRow } from './registry.ts';

/** A subscription's message as its developer sees it: the delivery, where it went, its attempts. */
export interface SubscriptionDelivery extends Omit<Delivery, 'endpoint_id'> {
  installation_id: string;
  customer_account_id: string | null;
  livemode: boolean;
  subscription_index: number;
  url: string;
  attempts: Attempt[];
}

export interface SubscriptionDeliveryFilter extends PageRequest {
  status?: WebhookDeliveriesTable['status'];
  installation_id?: string;
  event_type?: string;
}

/** GET /v1/developer/apps/{id}/subscription-deliveries: newest first, each with its attempts. */
export async function listSubscriptionDeliveries(
  ctx: AppContext,
  developerId: string,
  appId: string,
  filter: SubscriptionDeliveryFilter = {},
): Promise<Page<SubscriptionDelivery>> {
  const app = await ownedAppRow(ctx, developerId, appId);
  // Joined on the company too: on Citus, a join between shards is one within a company's.
  let query = ctx.db
    .selectFrom('webhook_deliveries')
    .innerJoin('webhook_endpoints as t', (join) =>
      join
        .onRef('t.id', '=', 'webhook_deliveries.endpoint_id')
        .onRef('t.tenant_id', '=', 'webhook_deliveries.tenant_id'),
    )
    .selectAll('webhook_deliveries')
    .select(['t.installation_id', 't.customer_account_id', 't.livemode', 't.subscription_index', 't.url'])
    .where('t.app_id', '=', app.id)
    .where('t.kind', '=', 'subscription');
  if (filter.status) query = query.where('webhook_deliveries.status', '=', filter.status);
  if (filter.installation_id) query = query.where('t.installation_id', '=', filter.installation_id);
  if (filter.event_type) query = query.where('webhook_deliveries.event_type', '=', filter.event_type);
  const page = await newestFirst(query, 'webhook_deliveries', filter, (row) => row);
  const attempts = await attemptsByDelivery(
    ctx,
    page.data.map((row) => row.id),
  );
  return {
    next_cursor: page.next_cursor,
    data: page.data.map((row) => {
      const { endpoint_id: _target, ...delivery } = presentDelivery(row);
      return {
        ...delivery,
        installation_id: row.installation_id ?? '',
        customer_account_id: row.customer_account_id,
        livemode: row.livemode,
        subscription_index: row.subscription_index ?? 0,
        url: row.url,
        attempts: attempts.get(row.id) ?? [],
      };
    }),
  };
}

/**
 * Sends one subscription message again now, with the same webhook-id, while its installation's
 * grant is in force (a suspended app or an approver gone: 409, nothing sent).
 */
export async function replaySubscriptionDelivery(
  ctx: AppContext,
  developerId: string,
  appId: string,
  deliveryId: string,
): Promise<AttemptOutcome> {
  const app = await ownedAppRow(ctx, developerId, appId);
  const found = await ctx.db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as t', (join) =>
      join.onRef('t.id', '=', 'd.endpoint_id').onRef('t.tenant_id', '=', 'd.tenant_id'),
    )
    .select(['d.id', 'd.tenant_id', 't.url', 't.installation_id'])
    .where('d.id', '=', deliveryId)
    .where('t.app_id', '=', app.id)
    .where('t.kind', '=', 'subscription')
    .executeTakeFirst();
  if (!found) throw new AppError('webhook_delivery.not_found');
  const grant = await sql<{ held_reason: string | null }>`
    SELECT held_reason FROM installation_grants
    WHERE installation_id = ${found.installation_id} AND tenant_id = ${found.tenant_id}`.execute(ctx.db);
  const held = grant.rows[0]?.held_reason;
  if (held === 'app_suspended') throw new AppError('app.suspended');
  if (held) throw new AppError('installation.needs_approval');
  await spendOutbound(ctx, { account: { kind: 'user', id: developerId }, url: found.url });
  return attemptDelivery(ctx, found.id, 'replay', found.tenant_id);
}

/**
 * POST .../subscription-deliveries/replay: as an endpoint's bulk replay (spec section 8), every
 * failed or cancelled message of the app's subscriptions created in the last 7 days goes back to
 * the queue, due now; of one installation when `installation_id` is given. Only to enabled targets,
 * of installations whose grant is in force and allows the type now, not muted, and only events of
 * a company (no test messages). One request from the outbound budget, whatever it queues.
 */
export async function replayFailedSubscriptionDeliveries(
  ctx: AppContext,
  developerId: string,
  appId: string,
  input: { installation_id?: string | undefined },
): Promise<{ replayed: number }> {
  const app = await ownedAppRow(ctx, developerId, appId);
  const now = ctx.clock.now();
  const since = addMs(now, -BULK_REPLAY_WINDOW_MS);
  const oneInstallation = input.installation_id
    ? sql`AND t.installation_id = ${input.installation_id}`
    : sql``;
  const targets = await sql<{ url: string }>`
    SELECT t.url FROM webhook_endpoints t
    WHERE t.app_id = ${app.id} AND t.kind = 'subscription' AND t.enabled ${oneInstallation} LIMIT 1`.execute(
    ctx.db,
  );
  const first = targets.rows[0];
  if (!first) return { replayed: 0 };
  await spendOutbound(ctx, { account: { kind: 'user', id: developerId }, url: first.url });
  const result = await sql`
    UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = ${now.toISOString()}::timestamptz,
      due_at = ${now.toISOString()}::timestamptz, locked_by = NULL, locked_until = NULL, line_shipment_id = NULL,
      line_seq = NULL, updated_at = ${now.toISOString()}::timestamptz
    FROM webhook_endpoints t
    JOIN installation_grants g ON g.installation_id = t.installation_id AND g.tenant_id = t.tenant_id
      AND g.held_reason IS NULL
    JOIN installations inst ON inst.id = t.installation_id AND inst.tenant_id = t.tenant_id
    WHERE d.endpoint_id = t.id AND d.tenant_id = t.tenant_id
      AND t.app_id = ${app.id} AND t.kind = 'subscription' AND t.enabled ${oneInstallation}
      AND d.status IN ('failed', 'cancelled')
      AND d.created_at >= ${since.toISOString()}::timestamptz
      AND scopes_allow(g.scopes, event_type_scope(d.event_type))
      -- jsonb_exists (the ? operator, immutable) rather than @> jsonb_build_array (stable), which
      -- Citus refuses on a column in an UPDATE; the same test on an array of strings.
      AND NOT jsonb_exists(inst.muted_event_types, d.event_type)
      AND EXISTS (SELECT 1 FROM events e WHERE e.id = d.event_id AND e.tenant_id = d.tenant_id)`.execute(
    ctx.db,
  );
  const replayed = Number(result.numAffectedRows ?? 0);
  if (replayed > 0) runAfterCommit(ctx);
  return { replayed };
}

/** One subscription as it stands for one installation. */
export interface EffectiveSubscription {
  index: number;
  event_types: string[];
  url: string;
  filter: Record<string, unknown> | null;
  test_events: boolean;
  /** Something of it is sent now. */
  active: boolean;
  /** Subscribed types this installation does not receive. */
  withheld_event_types: string[];
  /**
   * Why: `app_suspended`, `needs_approval` (the approver left or lost the role), `disabled` (its
   * target failed for 3 days or its URL answered 410), `scope_not_granted` (types the grant does
   * not allow), `muted` (types the app muted for this installation); null when all of it is sent.
   */
  reason: 'app_suspended' | 'needs_approval' | 'disabled' | 'scope_not_granted' | 'muted' | null;
}

/** GET /v1/developer/apps/{id}/installations/{inst_id}/subscriptions: the active version's, as they stand. */
export async function effectiveSubscriptions(
  ctx: AppContext,
  developerId: string,
  appId: string,
  installationId: string,
): Promise<{ installation_id: string; held_reason: string | null; data: EffectiveSubscription[] }> {
  const app = await ownedAppRow(ctx, developerId, appId);
  const { held_reason, data } = await subscriptionsOfInstallation(ctx, app.id, installationId);
  return { installation_id: installationId, held_reason, data };
}

/** An installation's grant in force, its muted types, and its subscriptions as they stand. */
export async function subscriptionsOfInstallation(
  ctx: AppContext,
  appId: string,
  installationId: string,
): Promise<{ held_reason: string | null; scopes: string[]; muted: string[]; data: EffectiveSubscription[] }> {
  const grant = await sql<{ held_reason: string | null; scopes: string[]; muted: unknown }>`
    SELECT g.held_reason, g.scopes, i.muted_event_types AS muted FROM installation_grants g
    JOIN installations i ON i.id = g.installation_id AND i.tenant_id = g.tenant_id
    WHERE g.installation_id = ${installationId} AND g.app_id = ${appId}`.execute(ctx.db);
  const found = grant.rows[0];
  if (!found) throw new AppError('installation.not_found');
  const muted = jsonArray<string>(found.muted);
  const active = await ctx.db
    .selectFrom('app_versions')
    .select('manifest')
    .where('app_id', '=', appId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  const manifest = (typeof active?.manifest === 'string' ? JSON.parse(active.manifest) : active?.manifest) as
    | Manifest
    | undefined;
  const targets = await ctx.db
    .selectFrom('webhook_endpoints')
    .select(['subscription_index', 'livemode', 'enabled'])
    .where('kind', '=', 'subscription')
    .where('installation_id', '=', installationId)
    .execute();
  const granted = new Set(found.scopes as Scope[]);
  const held = found.held_reason as 'app_suspended' | 'needs_approval' | null;
  const data = (manifest?.subscriptions ?? []).map((subscription, index): EffectiveSubscription => {
    const live = targets.find((t) => t.subscription_index === index && t.livemode);
    const disabled = live ? !live.enabled : false;
    const byScope = subscription.event_types.filter((type) => {
      const needed = eventTypeScope(type);
      return needed !== null && !allows(granted, needed);
    });
    const byMute = subscription.event_types.filter((type) => muted.includes(type) && !byScope.includes(type));
    const withheld = held || disabled ? subscription.event_types : [...byScope, ...byMute];
    const reason =
      held ??
      (disabled ? 'disabled' : byScope.length > 0 ? 'scope_not_granted' : byMute.length > 0 ? 'muted' : null);
    return {
      index,
      event_types: subscription.event_types,
      url: subscription.url,
      filter: subscription.filter,
      test_events: subscription.test_events,
      active: withheld.length < subscription.event_types.length,
      withheld_event_types: withheld,
      reason,
    };
  });
  return { held_reason: found.held_reason, scopes: found.scopes, muted, data };
}

import { type SqlBool, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { attemptedBetween } from '../../delivery/attempt-log.ts';
import { DAY, HOUR } from '../../lib/clock.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import type { Scope } from '../accounts/roles.ts';
import { jsonArray, ownedAppRow } from '../apps/registry.ts';

export const INSTALLATION_STATUSES = ['active', 'needs_approval', 'suspended', 'uninstalled'] as const;
export type InstallationStatus = (typeof INSTALLATION_STATUSES)[number];

/** An installation as the app's developer sees it (CONTRACT.md, the developer console). */
export interface AppInstallation {
  id: string;
  tenant_id: string;
  company_name: string;
  customer_account_id: string | null;
  scopes: Scope[];
  status: InstallationStatus;
  installed_at: string;
  uninstalled_at: string | null;
  uninstall_reason: string | null;
}

/**
 * Every installation the app had, with its status now: uninstalled (the record outlives the
 * installation), suspended (the app is), needs approval (the grant is not in force: the person
 * who approved left the company or its merchant account; decision 0024's installation_grants),
 * or active.
 */
function installationRecords(ctx: AppContext, appId: string) {
  const status = sql<InstallationStatus>`CASE
    WHEN r.uninstalled_at IS NOT NULL OR g.installation_id IS NULL THEN 'uninstalled'
    WHEN g.held_reason = 'app_suspended' THEN 'suspended'
    WHEN g.held_reason IS NOT NULL THEN 'needs_approval'
    ELSE 'active' END`;
  return ctx.db.selectFrom((db) =>
    db
      .selectFrom('installation_records as r')
      .leftJoin('installation_grants as g', 'g.installation_id', 'r.id')
      .leftJoin('companies as c', 'c.id', 'r.tenant_id')
      .select([
        'r.id',
        'r.tenant_id',
        'c.name as company_name',
        'r.customer_account_id',
        'r.scopes',
        'r.installed_at as created_at',
        'r.uninstalled_at',
        'r.uninstall_reason',
        status.as('status'),
      ])
      .where('r.app_id', '=', appId)
      .as('records'),
  );
}

export async function listAppInstallations(
  ctx: AppContext,
  developerId: string,
  appId: string,
  request: PageRequest & { status?: InstallationStatus },
): Promise<Page<AppInstallation>> {
  await ownedAppRow(ctx, developerId, appId);
  let query = installationRecords(ctx, appId).selectAll();
  if (request.status) query = query.where('status', '=', request.status);
  return newestFirst(query, 'records', request, (row) => ({
    id: row.id,
    tenant_id: row.tenant_id,
    company_name: row.company_name ?? '',
    customer_account_id: row.customer_account_id,
    scopes: jsonArray<Scope>(row.scopes),
    status: row.status,
    installed_at: row.created_at.toISOString(),
    uninstalled_at: row.uninstalled_at?.toISOString() ?? null,
    uninstall_reason: row.uninstall_reason,
  }));
}

export const STATS_WINDOWS = ['24h', '7d', '30d'] as const;
export type ConsoleWindow = (typeof STATS_WINDOWS)[number];

/** 24h: this UTC hour and the 23 before, by hour; 7d and 30d: this UTC day and the days before, by day. */
const WINDOWS: Record<ConsoleWindow, { step: number; buckets: number }> = {
  '24h': { step: HOUR, buckets: 24 },
  '7d': { step: DAY, buckets: 7 },
  '30d': { step: DAY, buckets: 30 },
};

export interface Bucket {
  at: string;
  installs: number;
  uninstalls: number;
  api_requests: number;
  api_errors: number;
}

export interface AppStats {
  window: ConsoleWindow;
  from: string;
  installations: { active: number; installed: number; uninstalled: number };
  api: {
    requests: number;
    by_status: { '2xx': number; '4xx': number; '5xx': number };
    top_errors: Array<{ code: string; count: number }>;
  };
  tokens: { issued: number; refreshed: number; invalid_grant: number; invalid_grant_anonymous: number };
  app_events: { attempts: number; success_rate: number | null };
  endpoints: { attempts: number; success_rate: number | null; failing: number };
  subscriptions: { attempts: number; success_rate: number | null; failing: number };
  daily: Bucket[];
}

const TOP_ERRORS = 5;
const rate = (succeeded: number, attempts: number) =>
  attempts === 0 ? null : Math.round((succeeded / attempts) * 10_000) / 10_000;

/** GET /v1/developer/apps/{id}/stats: how the app is doing, over whole hours or days. */
export async function appStats(
  ctx: AppContext,
  developerId: string,
  appId: string,
  window: ConsoleWindow,
): Promise<AppStats> {
  await ownedAppRow(ctx, developerId, appId);
  // This process's counts go in first, so that what it just did shows.
  await ctx.appUsage.flush();
  const { step, buckets } = WINDOWS[window];
  const now = ctx.clock.now().getTime();
  const from = new Date(Math.floor(now / step) * step - (buckets - 1) * step);
  const daily: Bucket[] = Array.from({ length: buckets }, (_, i) => ({
    at: new Date(from.getTime() + i * step).toISOString(),
    installs: 0,
    uninstalls: 0,
    api_requests: 0,
    api_errors: 0,
  }));
  const bucketOf = (at: Date) => daily[Math.floor((at.getTime() - from.getTime()) / step)];

  const [usage, records, active, appEvents, endpoints, failing, subscriptions, failingSubscriptions] =
    await Promise.all([
      ctx.db
        .selectFrom('app_usage')
        .select(['hour', 'metric', 'detail', 'count'])
        .where('app_id', '=', appId)
        .where('hour', '>=', from)
        .execute(),
      ctx.db
        .selectFrom('installation_records')
        .select(['installed_at', 'uninstalled_at'])
        .where('app_id', '=', appId)
        .where((eb) => eb.or([eb('installed_at', '>=', from), eb('uninstalled_at', '>=', from)]))
        .execute(),
      installationRecords(ctx, appId)
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('status', '=', 'active')
        .executeTakeFirstOrThrow(),
      attemptTotals(ctx, from, sql<SqlBool>`e.kind = 'app_events' AND e.app_id = ${appId}`),
      attemptTotals(ctx, from, installationEndpoints(appId)),
      failingTargets(ctx, installationEndpoints(appId)),
      attemptTotals(ctx, from, subscriptionTargets(appId)),
      failingTargets(ctx, subscriptionTargets(appId)),
    ]);

  const stats: AppStats = {
    window,
    from: from.toISOString(),
    installations: { active: Number(active.n), installed: 0, uninstalled: 0 },
    api: { requests: 0, by_status: { '2xx': 0, '4xx': 0, '5xx': 0 }, top_errors: [] },
    tokens: { issued: 0, refreshed: 0, invalid_grant: 0, invalid_grant_anonymous: 0 },
    app_events: appEvents,
    endpoints: { ...endpoints, failing },
    subscriptions: { ...subscriptions, failing: failingSubscriptions },
    daily,
  };
  for (const record of records) {
    if (record.installed_at >= from) {
      stats.installations.installed++;
      const bucket = bucketOf(record.installed_at);
      if (bucket) bucket.installs++;
    }
    if (record.uninstalled_at && record.uninstalled_at >= from) {
      stats.installations.uninstalled++;
      const bucket = bucketOf(record.uninstalled_at);
      if (bucket) bucket.uninstalls++;
    }
  }
  const errors = new Map<string, number>();
  for (const row of usage) {
    const n = Number(row.count);
    if (row.metric === 'api') {
      stats.api.requests += n;
      const bucket = bucketOf(row.hour);
      if (bucket) bucket.api_requests += n;
      if (row.detail === '2xx' || row.detail === '4xx' || row.detail === '5xx') {
        stats.api.by_status[row.detail] += n;
        if (row.detail !== '2xx' && bucket) bucket.api_errors += n;
      }
    } else if (row.metric === 'api_error') {
      errors.set(row.detail, (errors.get(row.detail) ?? 0) + n);
    } else if (row.metric === 'token' && Object.hasOwn(stats.tokens, row.detail)) {
      stats.tokens[row.detail as keyof AppStats['tokens']] += n;
    }
  }
  stats.api.top_errors = [...errors]
    .map(([code, count]) => ({ code, count }))
    .sort((a, b) => b.count - a.count || (a.code < b.code ? -1 : 1))
    .slice(0, TOP_ERRORS);
  return stats;
}

/** The webhook endpoints that installations of the app created (they go when it is uninstalled). */
function installationEndpoints(appId: string) {
  return sql<SqlBool>`e.kind = 'endpoint' AND e.installation_id IN (SELECT id FROM installations WHERE app_id = ${appId})`;
}

/** The delivery targets of the app's subscriptions, one per installation (decision 0053). */
function subscriptionTargets(appId: string) {
  return sql<SqlBool>`e.kind = 'subscription' AND e.app_id = ${appId}`;
}

/** Of those targets, the ones failing, or disabled by failure, now. */
async function failingTargets(ctx: AppContext, targets: ReturnType<typeof sql<SqlBool>>): Promise<number> {
  const row = await ctx.db
    .selectFrom('webhook_endpoints as e')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where(targets)
    .where((eb) =>
      eb.or([eb('e.failing_since', 'is not', null), eb('e.disabled_reason', 'in', ['gone', 'failing'])]),
    )
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function attemptTotals(
  ctx: AppContext,
  from: Date,
  targets: ReturnType<typeof sql<SqlBool>>,
): Promise<{ attempts: number; success_rate: number | null }> {
  const { rows } = await sql<{ attempts: string; succeeded: string }>`
    SELECT count(*) AS attempts, count(*) FILTER (WHERE t.status_code BETWEEN 200 AND 299) AS succeeded
    FROM webhook_attempt_log t JOIN webhook_endpoints e ON e.id = t.endpoint_id
    WHERE ${attemptedBetween(from, ctx.clock.now(), 't')} AND ${targets}`.execute(ctx.db);
  const attempts = Number(rows[0]?.attempts ?? 0);
  return { attempts, success_rate: rate(Number(rows[0]?.succeeded ?? 0), attempts) };
}

import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { attemptedBetween } from '../../delivery/attempt-log.ts';
import { FAILING_DISABLE_MS } from '../../delivery/schedule.ts';
import { addMs, HOUR } from '../../lib/clock.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { findVisibleEndpoint } from './endpoints.ts';

export const STATS_WINDOWS = ['24h', '7d'] as const;
export type StatsWindow = (typeof STATS_WINDOWS)[number];

const WINDOW_HOURS: Record<StatsWindow, number> = { '24h': 24, '7d': 7 * 24 };

/** Attempts made for real traffic: the schedule and replays. Test sends do not say how the endpoint is doing. */
const COUNTED_TRIGGERS = ['scheduled', 'replay'];

export interface HourlyCount {
  /** Start of the UTC clock hour. */
  hour: string;
  succeeded: number;
  failed: number;
}

export interface LastFailure {
  attempted_at: string;
  delivery_id: string;
  status_code: number | null;
  error: string | null;
}

export interface EndpointStats {
  window: StatsWindow;
  /** Start of the first hour counted; the window ends now. */
  from: string;
  to: string;
  attempts: number;
  succeeded: number;
  failed: number;
  /** succeeded / attempts, 0 to 1; null without attempts. */
  success_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  /** Start of the current streak of failures (no 2xx since); null when the last answer was 2xx. */
  failing_since: string | null;
  /** When the 3-day rule disables the endpoint if nothing succeeds before; null when not failing or disabled. */
  disables_at: string | null;
  /** The latest failed attempt in the history kept (30 days), whatever the window. */
  last_failure: LastFailure | null;
  /** One entry per UTC clock hour of the window, oldest first, empty hours included. */
  hourly: HourlyCount[];
}

/**
 * The window is whole UTC clock hours ending with the current one: 24h is this hour and the 23
 * before it, 7d this hour and the 167 before. The totals are the sum of `hourly`.
 */
export function windowStart(now: Date, window: StatsWindow): Date {
  const thisHour = Math.floor(now.getTime() / HOUR) * HOUR;
  return new Date(thisHour - (WINDOW_HOURS[window] - 1) * HOUR);
}

const rate = (succeeded: number, attempts: number) =>
  attempts === 0 ? null : Math.round((succeeded / attempts) * 10_000) / 10_000;

interface Totals {
  attempts: number;
  succeeded: number;
  p50: number | null;
  p95: number | null;
}

/** GET /v1/webhook-endpoints/{id}/stats: how an endpoint is doing, from its attempts (spec 2.5). */
export async function endpointStats(
  ctx: AppContext,
  access: TenantAccess,
  endpointId: string,
  window: StatsWindow,
): Promise<EndpointStats> {
  requireScope(access, 'webhooks:read');
  const endpoint = await findVisibleEndpoint(ctx.db, access, endpointId);
  const now = ctx.clock.now();
  const from = windowStart(now, window);
  const inWindow = sql`endpoint_id = ${endpointId} AND ${attemptedBetween(from, now)}
    AND trigger IN (${sql.join(COUNTED_TRIGGERS)})`;
  // A broker's confirmation has no status code and no error (destinations, decision 0072).
  const succeededIf = sql`(error IS NULL AND (status_code IS NULL OR status_code BETWEEN 200 AND 299))`;

  const totals = await sql<Totals>`
    SELECT count(*)::int AS attempts,
      count(*) FILTER (WHERE ${succeededIf})::int AS succeeded,
      percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
      percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95
    FROM webhook_attempt_log WHERE ${inWindow}`.execute(ctx.db);
  const byHour = await sql<{ hour: number; succeeded: number; failed: number }>`
    SELECT floor(extract(epoch FROM attempted_at) / 3600)::int AS hour,
      count(*) FILTER (WHERE ${succeededIf})::int AS succeeded,
      count(*) FILTER (WHERE NOT (${succeededIf}))::int AS failed
    FROM webhook_attempt_log WHERE ${inWindow}
    GROUP BY 1`.execute(ctx.db);
  // Failures are always rows of their own (only a 2xx first attempt is kept in its delivery).
  const lastFailure = await ctx.db
    .selectFrom('webhook_attempts')
    .select(['attempted_at', 'delivery_id', 'status_code', 'error'])
    .where('endpoint_id', '=', endpointId)
    .where('trigger', 'in', COUNTED_TRIGGERS as Array<'scheduled' | 'replay'>)
    .where((eb) =>
      eb.or([eb('error', 'is not', null), eb('status_code', '<', 200), eb('status_code', '>', 299)]),
    )
    .orderBy('attempted_at', 'desc')
    .limit(1)
    .executeTakeFirst();

  const counts = new Map(byHour.rows.map((row) => [Number(row.hour), row]));
  const firstHour = from.getTime() / HOUR;
  const hourly: HourlyCount[] = [];
  for (let i = 0; i < WINDOW_HOURS[window]; i++) {
    const row = counts.get(firstHour + i);
    hourly.push({
      hour: new Date((firstHour + i) * HOUR).toISOString(),
      succeeded: row ? Number(row.succeeded) : 0,
      failed: row ? Number(row.failed) : 0,
    });
  }

  const total = totals.rows[0] ?? { attempts: 0, succeeded: 0, p50: null, p95: null };
  const attempts = Number(total.attempts);
  const succeeded = Number(total.succeeded);
  const failingSince = endpoint.failing_since;
  return {
    window,
    from: from.toISOString(),
    to: now.toISOString(),
    attempts,
    succeeded,
    failed: attempts - succeeded,
    success_rate: rate(succeeded, attempts),
    p50_ms: total.p50 === null ? null : Math.round(Number(total.p50)),
    p95_ms: total.p95 === null ? null : Math.round(Number(total.p95)),
    failing_since: failingSince?.toISOString() ?? null,
    disables_at:
      failingSince && endpoint.enabled ? addMs(failingSince, FAILING_DISABLE_MS).toISOString() : null,
    last_failure: lastFailure
      ? {
          attempted_at: lastFailure.attempted_at.toISOString(),
          delivery_id: lastFailure.delivery_id,
          status_code: lastFailure.status_code,
          error: lastFailure.error,
        }
      : null,
    hourly,
  };
}

export interface EndpointHealth {
  attempts: number;
  succeeded: number;
  success_rate: number | null;
  failing_since: Date | null;
  disables_at: Date | null;
}

/**
 * Attempts, success rate and failing streak of several endpoints over a window, in two queries:
 * the endpoints list shows them for every row. The caller has already listed the endpoints
 * through the visibility rules.
 */
export async function endpointsHealth(
  ctx: AppContext,
  endpointIds: readonly string[],
  window: StatsWindow,
): Promise<Map<string, EndpointHealth>> {
  const health = new Map<string, EndpointHealth>();
  if (endpointIds.length === 0) return health;
  const ids = [...endpointIds];
  const now = ctx.clock.now();
  const { rows } = await sql<{ endpoint_id: string; attempts: number; succeeded: number }>`
    SELECT endpoint_id, count(*)::int AS attempts,
      count(*) FILTER (WHERE error IS NULL AND (status_code IS NULL OR status_code BETWEEN 200 AND 299))::int AS succeeded
    FROM webhook_attempt_log
    WHERE endpoint_id = ANY(${ids}::text[])
      AND ${attemptedBetween(windowStart(now, window), now)}
      AND trigger IN (${sql.join(COUNTED_TRIGGERS)})
    GROUP BY endpoint_id`.execute(ctx.db);
  const endpoints = await ctx.db
    .selectFrom('webhook_endpoints')
    .select(['id', 'enabled', 'failing_since'])
    .where('id', 'in', ids)
    .execute();
  for (const endpoint of endpoints) {
    const row = rows.find((r) => r.endpoint_id === endpoint.id);
    const attempts = Number(row?.attempts ?? 0);
    const succeeded = Number(row?.succeeded ?? 0);
    const failingSince = endpoint.failing_since;
    health.set(endpoint.id, {
      attempts,
      succeeded,
      success_rate: rate(succeeded, attempts),
      failing_since: failingSince,
      disables_at: failingSince && endpoint.enabled ? addMs(failingSince, FAILING_DISABLE_MS) : null,
    });
  }
  return health;
}

import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { newId } from '../lib/ids.ts';
import { byTenant } from './by-tenant.ts';
import type { DeliveryContext, EndpointNews } from './context.ts';
import { disableEndpoint } from './lifecycle.ts';
import type { SendingDelivery } from './message.ts';
import type { DeliveryKind } from './metrics.ts';
import {
  FAILING_DISABLE_MS,
  FAILING_NOTICE_MS,
  type Jitter,
  MAX_ATTEMPTS,
  nextAttemptAt,
  pauseOf,
} from './schedule.ts';
import { isSuccess, type SendResult } from './sender.ts';
import type { TargetKind } from './tables.ts';

export type Trigger = 'scheduled' | 'replay' | 'test';

/** One finished attempt, waiting to be written. */
export interface FinishedAttempt {
  /** The delivery as claimed; its payload is not needed to record the attempt. */
  delivery: Omit<SendingDelivery, 'payload'>;
  trigger: Trigger;
  attemptedAt: Date;
  headers: Record<string, string>;
  result: SendResult;
  /** Whether the endpoint had a failure streak when claimed (unknown: treated as yes). */
  endpointFailing?: boolean;
  /** An app's events target is retried on 410 too: only endpoints are gone for good. */
  targetKind?: TargetKind;
}

/** The metrics' name for a target kind. */
export function metricKind(kind: TargetKind | undefined): DeliveryKind {
  if (kind === 'app_events') return 'app_event';
  return kind === 'listener' ? 'listener' : 'endpoint';
}

function isGone(attempt: FinishedAttempt): boolean {
  return attempt.result.status_code === 410 && attempt.targetKind !== 'app_events';
}

/** The answer's head as hex, the one spelling of bytes both engines' drivers pass in an array. */
function hexOf(head: Uint8Array | null): string | null {
  return head === null ? null : Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('hex');
}

interface DeliveryChange {
  id: string;
  /** null keeps the delivery's status and schedule (a failed replay). */
  status: 'pending' | 'succeeded' | 'failed' | null;
  nextAt: Date | null;
  /** Scheduled attempts change only a delivery still pending (a disable may have cancelled it). */
  onlyPending: boolean;
  code: number | null;
  at: Date;
  /** The last scheduled attempt failed: the delivery has failed for good. */
  exhausted: boolean;
}

/** What an attempt does to its delivery (spec 6.3 to 6.5). */
function changeFor(attempt: FinishedAttempt, jitter: Jitter): DeliveryChange {
  const { delivery, result, trigger, attemptedAt: at } = attempt;
  const base = {
    id: delivery.id,
    code: result.status_code,
    at,
    onlyPending: trigger === 'scheduled',
    exhausted: false,
  };
  if (isSuccess(result)) return { ...base, status: 'succeeded', nextAt: null };
  if (isGone(attempt) || trigger === 'test') return { ...base, status: 'failed', nextAt: null };
  if (trigger === 'replay') return { ...base, status: null, nextAt: null };
  const attempts = delivery.attempt_count + 1;
  let next = attempts >= MAX_ATTEMPTS ? null : nextAttemptAt(attempts, at, jitter);
  // The receiver asked for a pause (Retry-After): the next attempt is not before its end.
  const pause = pauseOf(result, at);
  if (next && pause && pause > next) next = pause;
  return next
    ? { ...base, status: 'pending', nextAt: next }
    : { ...base, status: 'failed', nextAt: null, exhausted: true };
}

/**
 * Attempt rows and delivery changes in one call: atomic without a transaction of its own. The
 * statements are those of the database function webhook_record_attempts (migration 0015,
 * decision 0018), planned once per connection.
 */
async function writeAttempts(
  db: Db,
  attempts: readonly FinishedAttempt[],
  changes: readonly DeliveryChange[],
  distributed = false,
) {
  // On Citus, one call per company: each runs in its shard (decision 0074).
  if (!distributed) return writeBatch(db, null, attempts, changes);
  const paired = attempts.map((attempt, index) => ({ attempt, change: changes[index] as DeliveryChange }));
  for (const { tenant, items } of byTenant(paired, (pair) => pair.attempt.delivery.tenant_id))
    await writeBatch(
      db,
      tenant,
      items.map((pair) => pair.attempt),
      items.map((pair) => pair.change),
    );
}

async function writeBatch(
  db: Db,
  tenant: string | null,
  attempts: readonly FinishedAttempt[],
  changes: readonly DeliveryChange[],
) {
  const fn =
    tenant === null ? sql`webhook_record_attempts(` : sql`webhook_record_attempts_tenant(${tenant}::text, `;
  await sql`
    SELECT ${fn}
      ${attempts.map(() => newId('att'))}::text[],
      ${attempts.map((a) => a.delivery.id)}::text[],
      ${attempts.map((a) => a.delivery.tenant_id)}::text[],
      ${attempts.map((a) => a.delivery.endpoint_id)}::text[],
      ${attempts.map((a) => a.attemptedAt.toISOString())}::timestamptz[],
      ${attempts.map((a) => a.result.duration_ms)}::int[],
      ${attempts.map((a) => a.result.status_code)}::int[],
      ${attempts.map((a) => a.result.error)}::text[],
      ${attempts.map((a) => hexOf(a.result.response_head))}::text[],
      ${attempts.map((a) => a.trigger)}::text[],
      ${attempts.map((a) => JSON.stringify(a.headers))}::text[],
      ${changes.map((c) => c.id)}::text[],
      ${changes.map((c) => c.status)}::text[],
      ${changes.map((c) => c.nextAt?.toISOString() ?? null)}::timestamptz[],
      ${changes.map((c) => c.code)}::int[],
      ${changes.map((c) => c.at.toISOString())}::timestamptz[],
      ${changes.map((c) => c.onlyPending)}::boolean[])
  `.execute(db);
}

/**
 * What a batch says of an endpoint's failure streak: `restarted` when it holds both a 2xx and a
 * failure. Attempts of one batch were in flight together, so their order says nothing: the 2xx
 * ends the old streak, and the failure begins a new one. A streak begins when its first failed
 * attempt was made (`failedFrom`), not when the batch is written: the 3-day rule compares it with
 * a delivery's first attempt, and writing comes after sending.
 */
type Streak = Map<
  string,
  { state: 'ok' | 'failing' | 'restarted' | 'gone'; failedFrom: Date | null; tenant: string }
>;

/** Per endpoint, what the batch's outcomes say together; a 2xx alone matters only to a failing one. */
function streaksOf(attempts: readonly FinishedAttempt[]): Streak {
  const seen = new Map<
    string,
    { ok: boolean; failedFrom: Date | null; gone: boolean; wasFailing: boolean; tenant: string }
  >();
  for (const a of attempts) {
    const endpointId = a.delivery.endpoint_id;
    const facts = seen.get(endpointId) ?? {
      ok: false,
      failedFrom: null,
      gone: false,
      wasFailing: false,
      // An endpoint's deliveries are its company's.
      tenant: a.delivery.tenant_id,
    };
    if (isSuccess(a.result)) {
      facts.ok = true;
      facts.wasFailing ||= a.endpointFailing !== false;
    } else if (isGone(a)) facts.gone = true;
    else if (a.trigger === 'scheduled' && (facts.failedFrom === null || a.attemptedAt < facts.failedFrom))
      facts.failedFrom = a.attemptedAt;
    seen.set(endpointId, facts);
  }
  const streak: Streak = new Map();
  for (const [endpointId, { ok, failedFrom, gone, wasFailing, tenant }] of seen) {
    if (gone) streak.set(endpointId, { state: 'gone', failedFrom, tenant });
    else if (failedFrom) streak.set(endpointId, { state: ok ? 'restarted' : 'failing', failedFrom, tenant });
    else if (ok && wasFailing) streak.set(endpointId, { state: 'ok', failedFrom, tenant });
  }
  return streak;
}

/** What the streaks did: news for the hooks (once committed), and counts for the metrics. */
interface StreakEffects {
  news: EndpointNews[];
  /** Per endpoint disabled by this batch (410 or failing): how many deliveries it cancelled. */
  cancelled: Map<string, number>;
}

/**
 * `AND <alias>.tenant_id = <tenant>` when the statement is for one company (on Citus, so that it
 * runs in that company's shard, and may lock there), nothing otherwise (one PostgreSQL: one
 * statement for every company of the batch).
 */
function ofTenant(alias: string, tenant: string | null) {
  return tenant === null ? sql`` : sql` AND ${sql.ref(`${alias}.tenant_id`)} = ${tenant}`;
}

/**
 * Ends the streaks of `endpointIds` (of `tenant`, or of any company when null): each streak that
 * had been told as failing is news of a recovery. Answers the endpoints whose streak it ended.
 */
async function endStreaks(
  trx: Db,
  endpointIds: readonly string[],
  tenant: string | null,
  now: Date,
  news: EndpointNews[],
) {
  const { rows } = await sql<{ id: string; failing_since: Date; noticed: boolean }>`
    UPDATE webhook_endpoints e SET failing_since = NULL, failing_noticed_at = NULL
    FROM (SELECT o.id, o.tenant_id, o.failing_since, o.failing_noticed_at FROM webhook_endpoints o
      WHERE o.id = ANY (${endpointIds}::text[]) AND o.failing_since IS NOT NULL${ofTenant('o', tenant)}
      FOR UPDATE) old
    WHERE e.id = old.id AND e.tenant_id = old.tenant_id${ofTenant('e', tenant)}
    RETURNING e.id, old.failing_since, old.failing_noticed_at IS NOT NULL AS noticed`.execute(trx);
  for (const row of rows) {
    if (row.noticed)
      news.push({
        kind: 'recovered',
        endpointId: row.id,
        failingSince: new Date(row.failing_since),
        at: now,
      });
  }
}

/**
 * Applies the streaks: clears them on 2xx, starts them again on a 2xx beside a failure, tells a
 * streak that reached 24 hours (once), disables on 410 and after 3 days of failure. An app's
 * events target is never disabled: its deliveries are retried for three days and fail alone. A
 * delivery that used all its attempts while the endpoint never answered 2xx since that delivery's
 * first attempt disables it then (about 68.6 h): no later failure may ever come to reach the 72 h
 * mark. On Citus, company by company: each statement names the company, so that it runs (and
 * locks) in its shard; on one PostgreSQL, one statement for every company of the batch.
 */
async function applyStreaks(
  trx: Db,
  streak: Streak,
  exhausted: ReadonlyMap<string, string>,
  now: Date,
  distributed: boolean,
): Promise<StreakEffects> {
  if (!distributed) return applyStreaksOf(trx, streak, null, exhausted, now);
  const effects: StreakEffects = { news: [], cancelled: new Map() };
  for (const { tenant, items } of byTenant([...streak], ([, facts]) => facts.tenant)) {
    const done = await applyStreaksOf(trx, new Map(items), tenant, exhausted, now);
    effects.news.push(...done.news);
    for (const [endpointId, cancelled] of done.cancelled) effects.cancelled.set(endpointId, cancelled);
  }
  return effects;
}

/** The streaks of one company's endpoints (`tenant`), or of any company's (null). */
async function applyStreaksOf(
  trx: Db,
  streak: Streak,
  tenant: string | null,
  exhausted: ReadonlyMap<string, string>,
  now: Date,
): Promise<StreakEffects> {
  const effects: StreakEffects = { news: [], cancelled: new Map() };
  const ids = (kind: string) => [...streak].filter(([, v]) => v.state === kind).map(([id]) => id);
  const failedFrom = (endpointIds: string[]) =>
    endpointIds.map((id) => (streak.get(id)?.failedFrom ?? now).toISOString());
  const tenantOf = (endpointId: string) => (tenant === null ? undefined : streak.get(endpointId)?.tenant);
  const ended = [...ids('ok'), ...ids('restarted')];
  if (ended.length > 0) await endStreaks(trx, ended, tenant, now, effects.news);
  const restarted = ids('restarted');
  if (restarted.length > 0) {
    await sql`
      UPDATE webhook_endpoints e SET failing_since = v.since
      FROM unnest(${restarted}::text[], ${failedFrom(restarted)}::timestamptz[]) AS v(id, since)
      WHERE e.id = v.id AND e.enabled${ofTenant('e', tenant)}`.execute(trx);
  }
  for (const id of ids('gone')) {
    const cancelled = await disableEndpoint(trx, id, 'gone', now, tenantOf(id));
    if (cancelled === null) continue;
    effects.news.push({ kind: 'disabled', endpointId: id, reason: 'gone', at: now });
    effects.cancelled.set(id, cancelled);
  }
  const failing = ids('failing');
  if (failing.length === 0) return effects;
  // The streak's start, and its notice once it has lasted 24 hours (the null test makes it once).
  const noticeBefore = new Date(now.getTime() - FAILING_NOTICE_MS).toISOString();
  const { rows } = await sql<{ id: string; failing_since: Date | null; noticed_now: boolean }>`
    UPDATE webhook_endpoints e SET
      failing_since = COALESCE(e.failing_since, v.since),
      failing_noticed_at = CASE WHEN e.failing_noticed_at IS NULL
        AND COALESCE(e.failing_since, v.since) <= ${noticeBefore}::timestamptz
        THEN ${now.toISOString()}::timestamptz ELSE e.failing_noticed_at END
    FROM unnest(${failing}::text[], ${failedFrom(failing)}::timestamptz[]) AS v(id, since)
    WHERE e.id = v.id AND e.enabled${ofTenant('e', tenant)}
    RETURNING e.id, e.failing_since, e.failing_noticed_at = ${now.toISOString()}::timestamptz AS noticed_now`.execute(
    trx,
  );
  for (const row of rows) {
    if (!row.failing_since) continue;
    const since = new Date(row.failing_since);
    if (row.noticed_now)
      effects.news.push({ kind: 'failing', endpointId: row.id, failingSince: since, at: now });
    const exhaustedDelivery = exhausted.get(row.id);
    const failingLongEnough =
      now.getTime() - since.getTime() >= FAILING_DISABLE_MS ||
      (exhaustedDelivery !== undefined &&
        (await failingSinceFirstAttempt(trx, exhaustedDelivery, tenantOf(row.id), since)));
    if (!failingLongEnough) continue;
    const cancelled = await disableEndpoint(trx, row.id, 'failing', now, tenantOf(row.id));
    if (cancelled === null) continue;
    effects.news.push({ kind: 'disabled', endpointId: row.id, reason: 'failing', at: now });
    effects.cancelled.set(row.id, cancelled);
  }
  return effects;
}

/** Whether the streak began no later than the delivery's first scheduled attempt (no 2xx since). */
async function failingSinceFirstAttempt(
  trx: Db,
  deliveryId: string,
  tenant: string | undefined,
  since: Date,
): Promise<boolean> {
  let query = trx
    .selectFrom('webhook_attempts')
    .select((eb) => eb.fn.min('attempted_at').as('at'))
    .where('delivery_id', '=', deliveryId)
    .where('trigger', '=', 'scheduled');
  if (tenant !== undefined) query = query.where('tenant_id', '=', tenant);
  const first = await query.executeTakeFirst();
  return first?.at != null && since.getTime() <= new Date(first.at).getTime();
}

/**
 * Per endpoint, the latest end of the pauses its receiver asked for in this batch (Retry-After),
 * with the endpoint's company.
 */
function pausesOf(attempts: readonly FinishedAttempt[]): Map<string, { until: Date; tenant: string }> {
  const pauses = new Map<string, { until: Date; tenant: string }>();
  for (const attempt of attempts) {
    const pause = pauseOf(attempt.result, attempt.attemptedAt);
    const endpointId = attempt.delivery.endpoint_id;
    const before = pauses.get(endpointId);
    if (pause && (!before || pause > before.until))
      pauses.set(endpointId, { until: pause, tenant: attempt.delivery.tenant_id });
  }
  return pauses;
}

/**
 * Pauses endpoints (paused_until; the claim skips them until then); a longer pause set already
 * stays. On Citus, company by company (each statement in its shard).
 */
async function pauseEndpoints(
  trx: Db,
  pauses: ReadonlyMap<string, { until: Date; tenant: string }>,
  distributed: boolean,
): Promise<void> {
  const groups = distributed
    ? byTenant([...pauses], ([, pause]) => pause.tenant)
    : [{ tenant: null, items: [...pauses] }];
  for (const { tenant, items } of groups)
    await sql`
      UPDATE webhook_endpoints e SET paused_until = GREATEST(e.paused_until, v.until)
      FROM unnest(${items.map(([id]) => id)}::text[], ${items.map(([, p]) => p.until.toISOString())}::timestamptz[])
        AS v(id, until)
      WHERE e.id = v.id${ofTenant('e', tenant)}`.execute(trx);
}

/**
 * Writes finished attempts: the attempt rows, the deliveries' new state, and the endpoints'
 * failure streaks (410 disables at once; 3 days of failure disable too), in one short
 * transaction, or one statement when no endpoint changes (the common case of 2xx answers).
 * Returns what it changed about endpoints, to be reported (deliveryHooks) after the commit.
 */
export async function recordAttempts(
  ctx: DeliveryContext,
  attempts: readonly FinishedAttempt[],
  jitter: Jitter = Math.random,
): Promise<EndpointNews[]> {
  if (attempts.length === 0) return [];
  const distributed = ctx.database.distributed === true;
  const changes = attempts.map((attempt) => changeFor(attempt, jitter));
  const streak = streaksOf(attempts);
  const pauses = pausesOf(attempts);
  if (streak.size === 0 && pauses.size === 0) {
    await writeAttempts(ctx.db, attempts, changes, distributed);
    return [];
  }
  const now = ctx.clock.now();
  const exhausted = new Map<string, string>();
  for (const [index, change] of changes.entries()) {
    const endpointId = attempts[index]?.delivery.endpoint_id;
    if (change.exhausted && endpointId) exhausted.set(endpointId, change.id);
  }
  const effects = await ctx.db.transaction().execute(async (trx) => {
    await writeAttempts(trx, attempts, changes, distributed);
    if (pauses.size > 0) await pauseEndpoints(trx, pauses, distributed);
    return applyStreaks(trx, streak, exhausted, now, distributed);
  });
  // Committed: an attempt disabled these endpoints, and their waiting deliveries were cancelled.
  for (const [endpointId, cancelled] of effects.cancelled) {
    const kind = metricKind(attempts.find((a) => a.delivery.endpoint_id === endpointId)?.targetKind);
    ctx.metrics.deliveryOutcome(kind, 'disabled');
    ctx.metrics.deliveryOutcome(kind, 'cancelled', cancelled);
  }
  return effects.news;
}

import { sql } from 'kysely';
import { type Db, isDatabaseUnavailable } from '../db/database.ts';
import { eachAtMost } from '../lib/concurrency.ts';
import type { SendingDelivery, SendingEndpoint } from './message.ts';
import type { TargetKind } from './tables.ts';

export interface ClaimedRow extends SendingDelivery {
  kind: TargetKind;
  /** Null for an app that has no events URL yet: the attempt fails and is retried. */
  url: string | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  /** The endpoint's custom headers, sealed; null: none. */
  headers_sealed: string | null;
  /**
   * A rate-limited endpoint's message: not to be sent before this (clock time), nor much after it
   * (worker.ts gives it back then); null: no limit.
   */
  send_at: Date | null;
  /**
   * In a shipment's line at an ordered endpoint (migration 0041): sent only while its lease will
   * outlast the request, so that no worker takes the next of its shipment while it is in flight.
   */
  in_line: boolean;
}

export function endpointOf(row: ClaimedRow): SendingEndpoint {
  return { ...row, id: row.endpoint_id };
}

export interface ClaimRequest {
  workerId: string;
  now: Date;
  leaseUntil: Date;
  /** At most this many rows in all. */
  limit: number;
  /** At most this many rows of an endpoint not listed in `room`. */
  perEndpoint: number;
  /** Room left for endpoints with requests in flight here (0 = do not claim for it). */
  room: ReadonlyMap<string, number>;
  /**
   * Only these targets (the listeners connected to this process); without it, every target but
   * listeners, which only the process holding their connection can reach.
   */
  targets?: readonly string[];
  /** The walk over targets starts after this target id ('' = from the first). */
  after: string;
  /** Targets visited at most (WALK_TARGETS). */
  walkTargets?: number;
}

export interface Claimed {
  rows: ClaimedRow[];
  /** Where the next claim's walk starts: '' once this one reached the last target with work. */
  next: string;
  /** The last target this claim's walk visited ('' when it visited none). */
  walkedTo: string;
}

/** Targets visited per claim: enough to fill a batch, few enough that a claim stays short. */
export const WALK_TARGETS = 64;

/**
 * Claims due deliveries in one call (ARCHITECTURE.md step 3), target by target (decision 0016),
 * from the queued rows of the log (those with a `due_at`, decision 0074): a walk over the targets
 * with pending deliveries, one index descent each, in id order from where the previous claim
 * stopped, so that every target gets its turn; then, for each target with room here, its oldest
 * due rows, up to that room. A target that is full (a stuck endpoint whose slots are all held)
 * costs one descent: its waiting rows are never read, however many there are. Rows are locked
 * with FOR UPDATE SKIP LOCKED, so workers never claim the same row, and leased until
 * `leaseUntil`. The call commits at once: no lock is held while sending. The statements are those
 * of the database function webhook_claim (migration 0015, decision 0018), planned once per
 * connection.
 */
export async function claimDue(db: Db, request: ClaimRequest, distributed = false): Promise<Claimed> {
  if (distributed) return claimTenantByTenant(db, request);
  const partial = [...request.room];
  const result = await sql<ClaimedRow & { walked_to: string | null; walk_ended: boolean }>`
    SELECT * FROM webhook_claim(
      ${request.workerId}::text, ${request.now.toISOString()}::timestamptz,
      ${request.leaseUntil.toISOString()}::timestamptz, ${request.limit}::int, ${request.perEndpoint}::int,
      ${partial.map(([id]) => id)}::text[], ${partial.map(([, n]) => n)}::int[], ${request.after}::text,
      ${request.walkTargets ?? WALK_TARGETS}::int, ${request.targets ? [...request.targets] : null}::text[])
  `.execute(db);
  const progress = result.rows[0];
  const rows = result.rows
    .filter((row) => row.id !== null)
    .map(({ walked_to: _w, walk_ended: _e, ...row }) => row);
  const ended = progress?.walk_ended ?? true;
  const walkedTo = progress?.walked_to ?? '';
  return { rows, next: ended ? '' : walkedTo, walkedTo };
}

/** Companies with due deliveries asked for per claim on Citus: one query to every shard. */
const TENANTS_PER_CLAIM = 16;

/**
 * Up to TENANTS_PER_CLAIM companies with due deliveries this claim could take: not leased now,
 * on targets past its cursor, and of its targets when it names them (a listener hub's, so that
 * companies with older messages elsewhere never crowd them out); longest waiting first. One
 * query over every shard (8 ms on the local cluster); when it fails because a worker node is away
 * (a query over the table fails whole), each shard is asked apart (shardByShard).
 */
async function tenantsDue(db: Db, request: ClaimRequest): Promise<string[]> {
  const now = request.now.toISOString();
  const only = request.targets ? sql`AND endpoint_id = ANY (${[...request.targets]}::text[])` : sql``;
  try {
    const { rows } = await sql<{ tenant_id: string }>`
      SELECT tenant_id FROM webhook_deliveries
      WHERE due_at IS NOT NULL AND due_at <= ${now}::timestamptz
        AND (locked_until IS NULL OR locked_until < ${now}::timestamptz)
        AND endpoint_id > ${request.after}::text ${only}
      GROUP BY tenant_id ORDER BY min(due_at) LIMIT ${TENANTS_PER_CLAIM}`.execute(db);
    return rows.map((row) => row.tenant_id);
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    return shardByShard(db, request);
  }
}

/**
 * tenantsDue while a worker node is away: `run_command_on_shards` answers shard by shard, so the
 * companies of the nodes still up are claimed for and theirs wait (slower: 300 ms on the local
 * cluster, a connection per shard). Only when no shard answers does the claim fail, as when the
 * database is away.
 */
async function shardByShard(db: Db, request: ClaimRequest): Promise<string[]> {
  const now = request.now.toISOString();
  const targets = request.targets ? `{${request.targets.map((id) => `"${id}"`).join(',')}}` : null;
  const { rows } = await sql<{ success: boolean; result: string }>`
    SELECT success, result FROM run_command_on_shards('webhook_deliveries', format(
      $c$SELECT string_agg(tenant_id || ' ' || m, ',') FROM (
        SELECT tenant_id, extract(epoch FROM min(due_at))::text AS m FROM %%s
        WHERE due_at IS NOT NULL AND due_at <= %L::timestamptz
          AND (locked_until IS NULL OR locked_until < %L::timestamptz) AND endpoint_id > %L
          AND (%L::text[] IS NULL OR endpoint_id = ANY (%L::text[]))
        GROUP BY tenant_id ORDER BY min(due_at) LIMIT %s) due$c$,
      ${now}::text, ${now}::text, ${request.after}::text, ${targets}::text, ${targets}::text,
      ${TENANTS_PER_CLAIM}::int))`.execute(db);
  const answered = rows.filter((row) => row.success);
  if (rows.length > 0 && answered.length === 0)
    // As a connection failure (SQLSTATE class 08): the worker waits for the database, as in an outage.
    throw Object.assign(new Error(`no shard of the delivery log answered: ${rows[0]?.result ?? ''}`), {
      code: '08006',
    });
  const due: { tenant: string; since: number }[] = [];
  for (const { result } of answered) {
    if (!result) continue;
    for (const pair of result.split(',')) {
      const [tenant, since] = pair.split(' ');
      if (tenant) due.push({ tenant, since: Number(since) });
    }
  }
  return due
    .sort((a, b) => a.since - b.since)
    .slice(0, TENANTS_PER_CLAIM)
    .map((d) => d.tenant);
}

/**
 * The claim on Citus (decision 0074): `FOR UPDATE SKIP LOCKED` runs inside one shard only, so
 * each company's deliveries are claimed by the function webhook_claim_tenant, whose every
 * statement names the company and runs in its shard. The companies come from one read of every
 * shard, those waiting longest first; the shards' nodes claim in parallel for the workers, and a
 * worker that died leaves leases that expire, as on one PostgreSQL. The walk over targets goes on
 * from `after` in each company (target ids are unique across companies), and only companies with
 * due rows past `after` are asked for. The next claim starts at the least target where a
 * company's walk stopped short; when every walk ended and the companies asked for filled the
 * claim's places, past the furthest target walked (so that companies whose targets can take
 * nothing now, held back by room, rate or line, cannot keep the places from the others); and
 * from the start once fewer came. Every target of every company gets its turn, as on one
 * PostgreSQL, however many of a company's targets have work.
 */
async function claimTenantByTenant(db: Db, request: ClaimRequest): Promise<Claimed> {
  // At most one company per row the claim may take.
  const tenants = (await tenantsDue(db, request)).slice(0, request.limit);
  const partial = [...request.room];
  const claimFor = async (tenant: string, limit: number): Promise<TenantWalk> => {
    const result = await sql<ClaimedRow & { walked_to: string | null; walk_ended: boolean }>`
      SELECT * FROM webhook_claim_tenant(${tenant}::text,
        ${request.workerId}::text, ${request.now.toISOString()}::timestamptz,
        ${request.leaseUntil.toISOString()}::timestamptz, ${limit}::int, ${request.perEndpoint}::int,
        ${partial.map(([id]) => id)}::text[], ${partial.map(([, n]) => n)}::int[], ${request.after}::text,
        ${request.walkTargets ?? WALK_TARGETS}::int, ${request.targets ? [...request.targets] : null}::text[])
    `.execute(db);
    const progress = result.rows[0];
    return {
      rows: result.rows
        .filter((row) => row.id !== null)
        .map(({ walked_to: _w, walk_ended: _e, ...row }) => row),
      walkedTo: progress?.walked_to ?? '',
      stoppedShort: progress !== undefined && !progress.walk_ended && progress.walked_to !== null,
    };
  };
  // The companies' claims go to their nodes at once, each with its share of the limit; then a
  // company that took all of its share, and may have more, gets what the others left.
  const shareOf = (index: number) =>
    Math.floor(request.limit / tenants.length) + (index < request.limit % tenants.length ? 1 : 0);
  const walks = await eachAtMost(tenants, CLAIMS_AT_ONCE, (tenant) =>
    claimFor(tenant, shareOf(tenants.indexOf(tenant))),
  );
  const rows = walks.flatMap((walk) => walk.rows);
  for (const [index, tenant] of tenants.entries()) {
    const left = request.limit - rows.length;
    if (left <= 0) break;
    if ((walks[index] as TenantWalk).rows.length < shareOf(index)) continue;
    const more = await claimFor(tenant, left);
    rows.push(...more.rows);
    walks[index] = more;
  }
  // Where the walks of the companies claimed for stopped short of their last target.
  const stoppedAt = walks.filter((walk) => walk.stoppedShort).map((walk) => walk.walkedTo);
  const furthest =
    walks
      .map((walk) => walk.walkedTo)
      .sort()
      .at(-1) ?? '';
  const next = stoppedAt.sort()[0] ?? (tenants.length === TENANTS_PER_CLAIM ? furthest : '');
  // The last target visited, when one company's walk was the whole claim's.
  return { rows, next, walkedTo: walks.length === 1 ? (walks[0] as TenantWalk).walkedTo : '' };
}

/** One company's part of a claim on Citus, and how far its walk over targets went. */
interface TenantWalk {
  rows: ClaimedRow[];
  walkedTo: string;
  stoppedShort: boolean;
}

/** Companies' claims sent at once on Citus: each goes to its company's node. */
const CLAIMS_AT_ONCE = 4;

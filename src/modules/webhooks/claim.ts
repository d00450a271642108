import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
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
}

/** Targets visited per claim: enough to fill a batch, few enough that a claim stays short. */
export const WALK_TARGETS = 64;

/**
 * Claims due deliveries in one statement (ARCHITECTURE.md step 3), target by target (decision
 * 0016), from the queue kept apart from the log (webhook_queue, decision 0017): a walk over the
 * targets with pending deliveries, one index descent each, in id order from where the previous
 * claim stopped, so that every target gets its turn; then, for each target with room here, its
 * oldest due rows, up to that room. A target that is full (a stuck endpoint whose slots are all
 * held) costs one descent: its waiting rows are never read, however many there are. Rows are locked with FOR UPDATE SKIP LOCKED, so workers never claim the same
 * row, and leased until `leaseUntil`. The statement commits at once: no lock is held while sending.
 */
export async function claimDue(db: Db, request: ClaimRequest): Promise<Claimed> {
  const { now, limit } = request;
  const visits = request.walkTargets ?? WALK_TARGETS;
  const at = now.toISOString();
  const partial = [...request.room];
  // The listener hub names its targets; otherwise walk the index of pending deliveries by target.
  const walk = request.targets
    ? sql`SELECT id AS endpoint_id, row_number() OVER (ORDER BY id) AS n
        FROM unnest(${request.targets}::text[]) AS t(id) WHERE id > ${request.after}`
    : sql`WITH RECURSIVE walk(endpoint_id, n) AS (
          SELECT (SELECT min(q.endpoint_id) FROM webhook_queue q WHERE q.endpoint_id > ${request.after}), 1
          UNION ALL
          SELECT (SELECT min(q.endpoint_id) FROM webhook_queue q WHERE q.endpoint_id > w.endpoint_id), w.n + 1
          FROM walk w WHERE w.endpoint_id IS NOT NULL AND w.n < ${visits}
        )
        SELECT endpoint_id, n FROM walk WHERE endpoint_id IS NOT NULL`;
  const result = await sql<ClaimedRow & { walked_to: string | null; walk_ended: boolean }>`
    WITH walked AS MATERIALIZED (${walk}), ready AS (
      SELECT w.endpoint_id, w.n, COALESCE(room.left_over, ${request.perEndpoint}) AS room
      FROM walked w
      JOIN webhook_endpoints e ON e.id = w.endpoint_id AND e.enabled AND NOT e.held
        ${request.targets ? sql`` : sql`AND e.kind <> 'listener'`}
      LEFT JOIN unnest(${partial.map(([id]) => id)}::text[], ${partial.map(([, n]) => n)}::int[])
        AS room(endpoint_id, left_over) ON room.endpoint_id = w.endpoint_id
      WHERE COALESCE(room.left_over, ${request.perEndpoint}) > 0
    ), chosen AS (
      SELECT c.delivery_id
      FROM ready r CROSS JOIN LATERAL (
        SELECT q.delivery_id FROM webhook_queue q
        WHERE q.endpoint_id = r.endpoint_id AND q.next_attempt_at <= ${at}::timestamptz
          AND (q.locked_until IS NULL OR q.locked_until < ${at}::timestamptz)
        ORDER BY q.next_attempt_at
        LIMIT r.room
        FOR UPDATE OF q SKIP LOCKED
      ) c
      LIMIT ${limit}
    ), leased AS (
      UPDATE webhook_queue q
      SET locked_by = ${request.workerId}, locked_until = ${request.leaseUntil.toISOString()}::timestamptz
      FROM chosen WHERE q.delivery_id = chosen.delivery_id
      RETURNING q.delivery_id
    ), claimed AS (
      SELECT d.id, d.endpoint_id, d.event_id, d.event_type, d.payload, d.status, d.attempt_count,
        d.next_attempt_at, t.kind, t.url, t.secret_sealed, t.previous_secret_sealed, t.previous_secret_expires_at,
        t.failing_since
      FROM leased l JOIN webhook_deliveries d ON d.id = l.delivery_id JOIN delivery_targets t ON t.id = d.endpoint_id
    ), progress AS (
      SELECT max(endpoint_id) AS walked_to, count(*) < ${visits} AS walk_ended FROM walked
    )
    SELECT c.*, p.walked_to, p.walk_ended FROM progress p LEFT JOIN claimed c ON true
  `.execute(db);
  const progress = result.rows[0];
  const rows = result.rows
    .filter((row) => row.id !== null)
    .map(({ walked_to: _w, walk_ended: _e, ...row }) => row);
  const ended = progress?.walk_ended ?? true;
  return { rows, next: ended || !progress?.walked_to ? '' : progress.walked_to };
}

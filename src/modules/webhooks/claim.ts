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
}

/**
 * Claims due deliveries in one statement (ARCHITECTURE.md step 3): the oldest due rows of enabled
 * targets, not held by a suspension, that have room, at most the room of each endpoint (so one busy endpoint cannot take
 * every slot), locked with FOR UPDATE SKIP LOCKED so that workers never claim the same row, and
 * leased until `leaseUntil`. The statement commits at once: no lock is held while sending.
 */
export async function claimDue(db: Db, request: ClaimRequest): Promise<ClaimedRow[]> {
  const { now, limit } = request;
  const full = [...request.room].filter(([, room]) => room <= 0).map(([id]) => id);
  const partial = [...request.room].filter(([, room]) => room > 0);
  const scan = Math.max(limit * 4, 64);
  const result = await sql<ClaimedRow>`
    WITH candidates AS (
      SELECT d.id, d.endpoint_id, d.next_attempt_at
      FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled AND NOT e.held
      WHERE d.status = 'pending'
        AND d.next_attempt_at <= ${now.toISOString()}::timestamptz
        AND (d.locked_until IS NULL OR d.locked_until < ${now.toISOString()}::timestamptz)
        AND NOT (d.endpoint_id = ANY(${full}::text[]))
        AND ${request.targets ? sql`d.endpoint_id = ANY(${request.targets}::text[])` : sql`e.kind <> 'listener'`}
      ORDER BY d.next_attempt_at
      LIMIT ${scan}
    ), ranked AS (
      SELECT c.id, c.next_attempt_at,
        row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS rank,
        COALESCE(room.left_over, ${request.perEndpoint}) AS room
      FROM candidates c
      LEFT JOIN unnest(${partial.map(([id]) => id)}::text[], ${partial.map(([, n]) => n)}::int[])
        AS room(endpoint_id, left_over) ON room.endpoint_id = c.endpoint_id
    ), chosen AS (
      SELECT d.id
      FROM webhook_deliveries d JOIN ranked r ON r.id = d.id
      WHERE r.rank <= r.room
        AND d.status = 'pending'
        AND (d.locked_until IS NULL OR d.locked_until < ${now.toISOString()}::timestamptz)
      ORDER BY r.next_attempt_at
      LIMIT ${limit}
      FOR UPDATE OF d SKIP LOCKED
    )
    UPDATE webhook_deliveries d
    SET locked_by = ${request.workerId}, locked_until = ${request.leaseUntil.toISOString()}::timestamptz
    FROM chosen, delivery_targets t
    WHERE d.id = chosen.id AND t.id = d.endpoint_id
    RETURNING d.id, d.endpoint_id, d.event_id, d.event_type, d.payload, d.status, d.attempt_count,
      d.next_attempt_at, t.kind, t.url, t.secret_sealed, t.previous_secret_sealed, t.previous_secret_expires_at,
      t.failing_since
  `.execute(db);
  return result.rows;
}

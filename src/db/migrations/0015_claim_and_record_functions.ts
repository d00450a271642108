import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * The claim and the record as functions of the database (issue 10 throughput; decision 0018).
 * Sent as one big statement each, they were planned afresh on every call: about 1.5 ms of the
 * server's CPU per claim and 0.6 ms per record, whatever the batch. In PL/pgSQL each of their
 * statements is planned once per connection and its plan kept; every statement is written so that
 * a plan made without the values is the right one (`= ANY (ids)` by primary key, never a join
 * whose size the planner cannot see). One call is still one round trip and one transaction.
 */
export const CLAIM = `CREATE FUNCTION webhook_claim(p_worker text, p_now timestamptz, p_lease_until timestamptz, p_limit int,
  p_per_endpoint int, p_room_ids text[], p_room_left int[], p_after text, p_visits int, p_targets text[])
RETURNS TABLE (id text, endpoint_id text, event_id text, event_type text, payload text, status text,
  attempt_count int, next_attempt_at timestamptz, kind text, url text, secret_sealed text,
  previous_secret_sealed text, previous_secret_expires_at timestamptz, failing_since timestamptz,
  walked_to text, walk_ended boolean)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  walked text[];
  ids text[];
  last_walked text;
  ended boolean;
BEGIN
  -- The walk (decision 0016): the next targets with queued deliveries after p_after, one index
  -- descent each; or, for the listener hub, the targets it names.
  IF p_targets IS NULL THEN
    WITH RECURSIVE walk(e, n) AS (
      SELECT (SELECT min(q.endpoint_id) FROM webhook_queue q WHERE q.endpoint_id > p_after), 1
      UNION ALL
      SELECT (SELECT min(q.endpoint_id) FROM webhook_queue q WHERE q.endpoint_id > w.e), w.n + 1
      FROM walk w WHERE w.e IS NOT NULL AND w.n < p_visits
    )
    SELECT array_agg(w.e ORDER BY w.n) INTO walked FROM walk w WHERE w.e IS NOT NULL;
  ELSE
    SELECT array_agg(t.e ORDER BY t.e) INTO walked FROM unnest(p_targets) AS t(e) WHERE t.e > p_after;
  END IF;
  last_walked := walked[cardinality(walked)];
  ended := COALESCE(cardinality(walked), 0) < p_visits;
  IF walked IS NOT NULL THEN
    -- Each target with room here: its oldest due rows, up to that room, skipping rows another
    -- worker is locking; a full target costs one lookup.
    SELECT array_agg(c.delivery_id) INTO ids FROM (
      SELECT x.delivery_id
      FROM unnest(walked) WITH ORDINALITY AS w(e, n)
      JOIN webhook_endpoints en ON en.id = w.e AND en.enabled AND NOT en.held
        AND (p_targets IS NOT NULL OR en.kind <> 'listener')
      LEFT JOIN unnest(p_room_ids, p_room_left) AS r(e, left_over) ON r.e = w.e
      CROSS JOIN LATERAL (
        SELECT q.delivery_id FROM webhook_queue q
        WHERE q.endpoint_id = w.e AND q.next_attempt_at <= p_now
          AND (q.locked_until IS NULL OR q.locked_until < p_now)
        ORDER BY q.next_attempt_at
        LIMIT COALESCE(r.left_over, p_per_endpoint)
        FOR UPDATE OF q SKIP LOCKED
      ) x
      WHERE COALESCE(r.left_over, p_per_endpoint) > 0
      LIMIT p_limit
    ) c;
  END IF;
  IF ids IS NOT NULL THEN
    -- By primary key: a plan kept without the values must not read the whole queue.
    UPDATE webhook_queue q SET locked_by = p_worker, locked_until = p_lease_until WHERE q.delivery_id = ANY (ids);
    -- In the order claimed: target by target in the walk's order, oldest first within each.
    RETURN QUERY
      SELECT d.id, d.endpoint_id, d.event_id, d.event_type, d.payload, d.status, d.attempt_count, d.next_attempt_at,
        t.kind, t.url, t.secret_sealed, t.previous_secret_sealed, t.previous_secret_expires_at, t.failing_since,
        last_walked, ended
      FROM unnest(ids) WITH ORDINALITY AS i(id, n)
      JOIN webhook_deliveries d ON d.id = i.id
      JOIN delivery_targets t ON t.id = d.endpoint_id
      ORDER BY i.n;
  END IF;
  IF ids IS NULL OR NOT FOUND THEN
    -- Nothing claimed (or what was claimed is gone): one row still tells where the walk got to.
    RETURN QUERY SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::int,
      NULL::timestamptz, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
      last_walked, ended;
  END IF;
END
$fn$`;

export const RECORD = `CREATE FUNCTION webhook_record_attempts(a_id text[], a_delivery text[], a_endpoint text[], a_at timestamptz[], a_duration int[],
  a_code int[], a_error text[], a_body text[], a_trigger text[], a_headers text[],
  c_id text[], c_status text[], c_next timestamptz[], c_code int[], c_at timestamptz[], c_only_pending boolean[])
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  -- One attempt row each; then each delivery's outcome (the queue follows by its triggers). A
  -- scheduled attempt changes only a delivery still pending: a disable may have cancelled it.
  INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error,
    response_body, trigger, request_headers)
  SELECT a.id, a.delivery_id, a.endpoint_id, a.attempted_at, a.duration_ms, a.status_code, a.error,
    decode(a.response_body, 'hex'), a.trigger, a.request_headers::jsonb
  FROM unnest(a_id, a_delivery, a_endpoint, a_at, a_duration, a_code, a_error, a_body, a_trigger, a_headers)
    AS a(id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error, response_body, trigger,
    request_headers);
  UPDATE webhook_deliveries AS d SET
    status = COALESCE(v.status, d.status),
    next_attempt_at = CASE WHEN v.status IS NULL THEN d.next_attempt_at ELSE v.next_at END,
    attempt_count = d.attempt_count + 1,
    last_status_code = v.code,
    last_attempt_at = v.at,
    updated_at = v.at
  FROM unnest(c_id, c_status, c_next, c_code, c_at, c_only_pending) AS v(id, status, next_at, code, at, only_pending)
  WHERE d.id = v.id AND (NOT v.only_pending OR d.status = 'pending');
END
$fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [CLAIM, RECORD]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP FUNCTION webhook_record_attempts(text[], text[], text[], timestamptz[], int[], int[], text[], text[], text[], text[], text[], text[], timestamptz[], int[], timestamptz[], boolean[])',
    'DROP FUNCTION webhook_claim(text, timestamptz, timestamptz, int, int, text[], int[], text, int, text[])',
  ]);
}

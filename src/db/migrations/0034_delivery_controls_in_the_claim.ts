import type { Kysely } from 'kysely';
import { CLAIM_BY_REFERENCE } from './0016_delivery_payload_by_reference.ts';
import { runStatements } from './sql.ts';

export const CLAIM_SIGNATURE =
  'webhook_claim(text, timestamptz, timestamptz, int, int, text[], int[], text, int, text[])';

/** The view of migration 0005, with the endpoint's custom headers at its end. */
const TARGETS_VIEW = `CREATE OR REPLACE VIEW delivery_targets AS
  SELECT e.id, e.kind, e.app_id, e.enabled, e.held, e.failing_since,
    COALESCE(a.events_url, e.url) AS url,
    COALESCE(a.events_secret_sealed, e.secret_sealed) AS secret_sealed,
    CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_sealed ELSE e.previous_secret_sealed END
      AS previous_secret_sealed,
    CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_expires_at
      ELSE e.previous_secret_expires_at END AS previous_secret_expires_at,
    e.headers_sealed
  FROM webhook_endpoints e
  LEFT JOIN apps a ON e.kind = 'app_events' AND a.id = e.app_id`;

const TARGETS_VIEW_BEFORE = `CREATE VIEW delivery_targets AS
  SELECT e.id, e.kind, e.app_id, e.enabled, e.held, e.failing_since,
    COALESCE(a.events_url, e.url) AS url,
    COALESCE(a.events_secret_sealed, e.secret_sealed) AS secret_sealed,
    CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_sealed ELSE e.previous_secret_sealed END
      AS previous_secret_sealed,
    CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_expires_at
      ELSE e.previous_secret_expires_at END AS previous_secret_expires_at
  FROM webhook_endpoints e
  LEFT JOIN apps a ON e.kind = 'app_events' AND a.id = e.app_id`;

/**
 * A rate-limited endpoint's theoretical arrival time (GCRA): when its next message may be sent.
 * Apart from the endpoint's row, which the API and the record write: only claims write here.
 */
const RATE_STATE = `CREATE TABLE webhook_rate_state (
  endpoint_id text PRIMARY KEY REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  tat timestamptz
)`;

/**
 * The claim of migrations 0015 and 0016 (decision 0018), acting on the receiver's controls
 * (issue 23, decision 0027): it returns the endpoint's sealed custom headers with each row, and
 * skips an endpoint its receiver paused (Retry-After) until the pause ends, and gives each message
 * to a rate-limited endpoint its send time (`send_at`), its limit shared by every worker.
 */
export const CLAIM = `CREATE FUNCTION webhook_claim(p_worker text, p_now timestamptz, p_lease_until timestamptz, p_limit int,
  p_per_endpoint int, p_room_ids text[], p_room_left int[], p_after text, p_visits int, p_targets text[])
RETURNS TABLE (id text, endpoint_id text, event_id text, event_type text, payload text, status text,
  attempt_count int, next_attempt_at timestamptz, kind text, url text, secret_sealed text,
  previous_secret_sealed text, previous_secret_expires_at timestamptz, failing_since timestamptz,
  headers_sealed text, send_at timestamptz, walked_to text, walk_ended boolean)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  walked text[];
  ids text[];
  last_walked text;
  ended boolean;
  lim_ids text[];
  lim_start timestamptz[];
  lim_step interval[];
  lim_allow int[];
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
    -- Rate limits (GCRA): each limited target's theoretical arrival time, locked so that claims of
    -- every worker take turns with it. Its messages get send times one step apart (a second over
    -- 0.92 of its limit) from that time, no sooner than 100 ms from now (the claim's way back), and
    -- a claim takes those that fall within the next second.
    WITH locked AS (
      INSERT INTO webhook_rate_state AS s (endpoint_id, tat)
        SELECT en.id, NULL FROM webhook_endpoints en
        WHERE en.id = ANY (walked) AND en.rate_limit IS NOT NULL ORDER BY en.id
      ON CONFLICT (endpoint_id) DO UPDATE SET tat = s.tat
      RETURNING s.endpoint_id, s.tat
    )
    SELECT array_agg(st.endpoint_id), array_agg(st.start), array_agg(st.step),
      array_agg(GREATEST(0, floor(extract(epoch FROM (p_now + interval '1 second' - st.start))
        / extract(epoch FROM st.step)))::int)
    INTO lim_ids, lim_start, lim_step, lim_allow
    FROM (
      SELECT l.endpoint_id, GREATEST(l.tat, p_now + interval '100 milliseconds') AS start,
        make_interval(secs => 1.0::double precision / (en.rate_limit * 0.92)) AS step
      FROM locked l JOIN webhook_endpoints en ON en.id = l.endpoint_id
    ) st;
    -- Each target with room here and not paused by its receiver (Retry-After): its oldest due
    -- rows, up to that room, skipping rows another worker is locking; a full target costs one
    -- lookup. What waits behind a pause is not claimed, so it uses none of its attempts.
    SELECT array_agg(c.delivery_id) INTO ids FROM (
      SELECT x.delivery_id
      FROM unnest(walked) WITH ORDINALITY AS w(e, n)
      JOIN webhook_endpoints en ON en.id = w.e AND en.enabled AND NOT en.held
        AND (p_targets IS NOT NULL OR en.kind <> 'listener')
        AND (en.paused_until IS NULL OR en.paused_until <= p_now)
      LEFT JOIN unnest(p_room_ids, p_room_left) AS r(e, left_over) ON r.e = w.e
      LEFT JOIN unnest(lim_ids, lim_allow) AS lim(e, allow) ON lim.e = w.e
      CROSS JOIN LATERAL (
        SELECT q.delivery_id FROM webhook_queue q
        WHERE q.endpoint_id = w.e AND q.next_attempt_at <= p_now
          AND (q.locked_until IS NULL OR q.locked_until < p_now)
        ORDER BY q.next_attempt_at
        LIMIT LEAST(COALESCE(r.left_over, p_per_endpoint), COALESCE(lim.allow, p_per_endpoint))
        FOR UPDATE OF q SKIP LOCKED
      ) x
      WHERE LEAST(COALESCE(r.left_over, p_per_endpoint), COALESCE(lim.allow, p_per_endpoint)) > 0
      LIMIT p_limit
    ) c;
  END IF;
  IF ids IS NOT NULL THEN
    -- By primary key: a plan kept without the values must not read the whole queue.
    UPDATE webhook_queue q SET locked_by = p_worker, locked_until = p_lease_until WHERE q.delivery_id = ANY (ids);
    -- The limited targets' arrival times move on by the messages claimed for them.
    IF lim_ids IS NOT NULL THEN
      UPDATE webhook_rate_state s SET tat = l.start + c.k * l.step
      FROM unnest(lim_ids, lim_start, lim_step) AS l(e, start, step)
      JOIN (SELECT q.endpoint_id AS e, count(*)::int AS k FROM webhook_queue q
        WHERE q.delivery_id = ANY (ids) GROUP BY q.endpoint_id) c ON c.e = l.e
      WHERE s.endpoint_id = l.e;
    END IF;
    -- In the order claimed: target by target in the walk's order, oldest first within each.
    RETURN QUERY
      SELECT d.id, d.endpoint_id, d.event_id, d.event_type,
        COALESCE(d.payload, (SELECT ev.payload FROM events ev WHERE ev.id = d.event_id)), d.status,
        d.attempt_count, d.next_attempt_at,
        t.kind, t.url, t.secret_sealed, t.previous_secret_sealed, t.previous_secret_expires_at, t.failing_since,
        t.headers_sealed,
        l.start + (row_number() OVER (PARTITION BY d.endpoint_id ORDER BY i.n) - 1) * l.step,
        last_walked, ended
      FROM unnest(ids) WITH ORDINALITY AS i(id, n)
      JOIN webhook_deliveries d ON d.id = i.id
      JOIN delivery_targets t ON t.id = d.endpoint_id
      LEFT JOIN unnest(lim_ids, lim_start, lim_step) AS l(e, start, step) ON l.e = d.endpoint_id
      ORDER BY i.n;
  END IF;
  IF ids IS NULL OR NOT FOUND THEN
    -- Nothing claimed (or what was claimed is gone): one row still tells where the walk got to.
    RETURN QUERY SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::int,
      NULL::timestamptz, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
      NULL::text, NULL::timestamptz, last_walked, ended;
  END IF;
END
$fn$`;

/**
 * The receiver's delivery controls in the engine (issue 23, decision 0027): the claim returns the
 * endpoint's custom headers (sealed; the engine opens them and sends them with every message), and
 * claims nothing for an endpoint while it is paused, and spaces a rate-limited endpoint's messages
 * (a GCRA arrival time kept in webhook_rate_state, advanced by each claim under a row lock).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [RATE_STATE, TARGETS_VIEW, `DROP FUNCTION ${CLAIM_SIGNATURE}`, CLAIM]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `DROP FUNCTION ${CLAIM_SIGNATURE}`,
    CLAIM_BY_REFERENCE,
    'DROP VIEW delivery_targets',
    TARGETS_VIEW_BEFORE,
    'DROP TABLE webhook_rate_state',
  ]);
}

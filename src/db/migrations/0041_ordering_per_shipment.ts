import type { Kysely } from 'kysely';
import { QUEUE_FOLLOW } from './0014_delivery_queue.ts';
import { deliveriesInsert, fanOut, GRANT_ALLOWS } from './0033_installation_grants.ts';
import { CLAIM as CLAIM_BEFORE, CLAIM_SIGNATURE } from './0034_delivery_controls_in_the_claim.ts';
import { setSearchPath } from './0040_function_search_path.ts';
import { runStatements } from './sql.ts';

/**
 * Ordering per shipment (issue 23 item 4, decision 0030). A queued message to an endpoint with
 * `ordering: per_shipment` carries its shipment and its place in that shipment's line (`seq`, from
 * one sequence, taken in the transaction that wrote the event: a shipment's events are written one
 * transaction after another, under its row lock, so their numbers follow their order). The claim
 * takes such a message only when no earlier message of its shipment is still in the queue, whether
 * leased, waiting for a retry or put off by a pause: the earlier message's row is the lock, and it
 * leaves the queue only once it succeeded, failed for good or was cancelled. Messages without a
 * shipment, replays and test sends (sent outside the queue) are outside the order.
 *
 * So that the claim does not read a failing shipment's waiting messages over and over, they are
 * due no sooner than the message first in their line: the fan-out puts a new message at the time
 * of the last one queued ahead of it, a retry moves those behind it to its own time, and when a
 * message leaves the queue the one now first gets its own time back.
 */
const SEQUENCE = 'CREATE SEQUENCE webhook_queue_order';
const COLUMNS = 'ALTER TABLE webhook_queue ADD COLUMN shipment_id text, ADD COLUMN seq bigint';
const LINE_INDEX = `CREATE INDEX webhook_queue_shipment_line ON webhook_queue (endpoint_id, shipment_id, seq)
  WHERE shipment_id IS NOT NULL`;
/** The fan-out asks whether a tenant has an ordered endpoint at all: almost always not, and at once. */
const ORDERED_INDEX = `CREATE INDEX webhook_endpoints_ordered ON webhook_endpoints (tenant_id)
  WHERE ordering = 'per_shipment'`;

/** The targets view of migration 0034, with the endpoint's ordering at its end. */
export const TARGETS_VIEW = `CREATE OR REPLACE VIEW delivery_targets AS
  SELECT e.id, e.kind, e.app_id, e.enabled, e.held, e.failing_since,
    COALESCE(a.events_url, e.url) AS url,
    COALESCE(a.events_secret_sealed, e.secret_sealed) AS secret_sealed,
    CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_sealed ELSE e.previous_secret_sealed END
      AS previous_secret_sealed,
    CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_expires_at
      ELSE e.previous_secret_expires_at END AS previous_secret_expires_at,
    e.headers_sealed, e.ordering
  FROM webhook_endpoints e
  LEFT JOIN apps a ON e.kind = 'app_events' AND a.id = e.app_id`;

/**
 * The lines of the shipments in (g_endpoints, g_shipments) lost a message: the one now first is
 * due at its own time, and those behind it no sooner than it.
 */
const RESTORE_TIMES = `IF g_endpoints IS NOT NULL THEN
      -- Each delivery read by its key (the LIMIT keeps each lookup a nested index probe: a join the
      -- planner may turn into a hash over the whole log, a month of it).
      UPDATE webhook_queue f SET next_attempt_at = t.due
      FROM (
        SELECT line.delivery_id,
          CASE WHEN line.seq = h.seq THEN own.at ELSE GREATEST(own.at, head.at) END AS due
        FROM (SELECT DISTINCT g.e, g.s FROM unnest(g_endpoints, g_shipments) AS g(e, s)) g
        CROSS JOIN LATERAL (
          SELECT x.delivery_id, x.seq FROM webhook_queue x
          WHERE x.endpoint_id = g.e AND x.shipment_id = g.s ORDER BY x.seq LIMIT 1
        ) h
        CROSS JOIN LATERAL (
          SELECT d.next_attempt_at AS at FROM webhook_deliveries d WHERE d.id = h.delivery_id LIMIT 1
        ) head
        JOIN webhook_queue line ON line.endpoint_id = g.e AND line.shipment_id = g.s
        CROSS JOIN LATERAL (
          SELECT d.next_attempt_at AS at FROM webhook_deliveries d WHERE d.id = line.delivery_id LIMIT 1
        ) own
      ) t
      WHERE f.delivery_id = t.delivery_id AND f.next_attempt_at IS DISTINCT FROM t.due;
    END IF;`;

const QUEUE_FOLLOW_IN_ORDER = `CREATE OR REPLACE FUNCTION webhook_queue_follow() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    g_endpoints text[];
    g_shipments text[];
    g_retried text[];
  BEGIN
    IF TG_OP = 'INSERT' THEN
      -- A shipment's place in an ordered endpoint's line is set by the fan-out that made the row.
      INSERT INTO webhook_queue (delivery_id, endpoint_id, next_attempt_at)
        SELECT id, endpoint_id, next_attempt_at FROM new_rows
        WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
    ELSIF TG_OP = 'UPDATE' THEN
      WITH gone AS (
        DELETE FROM webhook_queue q USING new_rows n
        WHERE q.delivery_id = n.id AND (n.status <> 'pending' OR n.next_attempt_at IS NULL)
        RETURNING q.endpoint_id, q.shipment_id
      )
      SELECT array_agg(gone.endpoint_id), array_agg(gone.shipment_id) INTO g_endpoints, g_shipments
      FROM gone WHERE gone.shipment_id IS NOT NULL;
      ${RESTORE_TIMES}
      -- Due again (a retry's new time, a replay): its place in line, and no lease.
      WITH due AS (
        INSERT INTO webhook_queue (delivery_id, endpoint_id, next_attempt_at)
          SELECT n.id, n.endpoint_id, n.next_attempt_at FROM new_rows n JOIN old_rows o ON o.id = n.id
          WHERE n.status = 'pending' AND n.next_attempt_at IS NOT NULL
            AND (o.status <> 'pending' OR o.next_attempt_at IS DISTINCT FROM n.next_attempt_at)
        ON CONFLICT (delivery_id) DO UPDATE
          SET next_attempt_at = EXCLUDED.next_attempt_at, locked_by = NULL, locked_until = NULL
        RETURNING webhook_queue.delivery_id, webhook_queue.shipment_id
      )
      SELECT array_agg(due.delivery_id) INTO g_retried FROM due WHERE due.shipment_id IS NOT NULL;
      IF g_retried IS NOT NULL THEN
        -- A retry in a shipment's line: what waits behind it is due no sooner.
        UPDATE webhook_queue f SET next_attempt_at = h.next_attempt_at
        FROM webhook_queue h
        WHERE h.delivery_id = ANY (g_retried) AND f.endpoint_id = h.endpoint_id
          AND f.shipment_id = h.shipment_id AND f.seq > h.seq AND f.next_attempt_at < h.next_attempt_at;
      END IF;
    ELSE
      WITH gone AS (
        DELETE FROM webhook_queue q USING old_rows o WHERE q.delivery_id = o.id
        RETURNING q.endpoint_id, q.shipment_id
      )
      SELECT array_agg(gone.endpoint_id), array_agg(gone.shipment_id) INTO g_endpoints, g_shipments
      FROM gone WHERE gone.shipment_id IS NOT NULL;
      ${RESTORE_TIMES}
    END IF;
    RETURN NULL;
  END $$`;

const DELIVERIES_INSERT = deliveriesInsert(GRANT_ALLOWS);

/**
 * The insert, returning what it made; the messages made for ordered targets get their shipment and
 * their place in its line, in the order of the events given. `count` receives the rows made.
 * Migration 0064 gives app subscriptions' ordered targets the same.
 */
export function lineUpMade(insert: string, count: string): string {
  return `  WITH made AS (
    ${insert}
    RETURNING id, endpoint_id, event_id
  )
  SELECT count(*)::int,
    array_agg(m.id ORDER BY i.n, m.id) FILTER (WHERE lined.shipment_id IS NOT NULL),
    array_agg(lined.shipment_id ORDER BY i.n, m.id) FILTER (WHERE lined.shipment_id IS NOT NULL)
  INTO ${count}, lined_ids, lined_shipments
  FROM made m
  JOIN unnest(p_event_ids) WITH ORDINALITY AS i(id, n) ON i.id = m.event_id
  -- The event's shipment, for an ordered endpoint's message: read by key (the LIMIT keeps it a
  -- nested index probe, never a hash over a month of events).
  LEFT JOIN LATERAL (
    SELECT stored.shipment_id FROM events stored
    WHERE stored.id = m.event_id
      AND EXISTS (SELECT 1 FROM webhook_endpoints o WHERE o.id = m.endpoint_id AND o.ordering = 'per_shipment')
    LIMIT 1
  ) lined ON true;
  IF lined_ids IS NOT NULL THEN
    UPDATE webhook_queue q SET shipment_id = l.s, seq = l.seq,
      next_attempt_at = GREATEST(q.next_attempt_at, COALESCE((
        SELECT max(p.next_attempt_at) FROM webhook_queue p
        WHERE p.endpoint_id = q.endpoint_id AND p.shipment_id = l.s), q.next_attempt_at))
    FROM (
      SELECT u.id, u.s, nextval('webhook_queue_order') AS seq
      FROM unnest(lined_ids, lined_shipments) WITH ORDINALITY AS u(id, s, n)
    ) l
    WHERE q.delivery_id = l.id;
  END IF;
`;
}

/**
 * The fan-out of migration 0033; when one of the events' tenants has an ordered endpoint, the
 * messages made for such endpoints get their shipment and their place in its line, in the order
 * of the events given. The insert is given: migration 0061 adds the endpoints' filters to it.
 */
export function fanOutInOrder(insert: string): string {
  return `CREATE OR REPLACE FUNCTION webhook_fan_out(p_event_ids text[], p_types text[], p_tenants text[],
  p_livemodes boolean[], p_accounts text[], p_now timestamptz)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  inserted int;
  stamp text := waybill_id_time(clock_timestamp());
  lined_ids text[];
  lined_shipments text[];
BEGIN
  IF NOT EXISTS (SELECT 1 FROM webhook_endpoints o WHERE o.ordering = 'per_shipment' AND o.tenant_id = ANY (p_tenants)) THEN
    ${insert};
    GET DIAGNOSTICS inserted = ROW_COUNT;
    RETURN inserted;
  END IF;
${lineUpMade(insert, 'inserted')}  RETURN inserted;
END
$fn$`;
}

const FAN_OUT_IN_ORDER = fanOutInOrder(DELIVERIES_INSERT);

/**
 * A rate-limited endpoint's messages are spaced at this share of its limit: the rest (about 50 ms
 * in any second) is room for a message sent late by up to LATE_MS (worker.ts) and the network's
 * jitter, so that no sliding second at the receiver holds more than the limit (migration 0034
 * spaced them at 0.92).
 */
const SPACING = 0.95;

/**
 * The claim of migration 0034, keeping each ordered shipment's line: a message with a shipment is
 * taken only when none of the same shipment and endpoint is ahead of it in the queue. The OR keeps
 * the check a lookup per candidate row (an anti-join would read the whole line index). It also
 * says which rows are in a line (`in_line`): the worker sends those only while their lease will
 * outlast the request, so that an expired lease never lets two of one shipment be in flight.
 */
export const CLAIM = `CREATE FUNCTION webhook_claim(p_worker text, p_now timestamptz, p_lease_until timestamptz, p_limit int,
  p_per_endpoint int, p_room_ids text[], p_room_left int[], p_after text, p_visits int, p_targets text[])
RETURNS TABLE (id text, endpoint_id text, event_id text, event_type text, payload text, status text,
  attempt_count int, next_attempt_at timestamptz, kind text, url text, secret_sealed text,
  previous_secret_sealed text, previous_secret_expires_at timestamptz, failing_since timestamptz,
  headers_sealed text, send_at timestamptz, in_line boolean, walked_to text, walk_ended boolean)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  walked text[];
  ids text[];
  lined text[];
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
    -- Rate limits (GCRA, migration 0034): each limited target's theoretical arrival time, locked
    -- so that claims of every worker take turns with it; its messages get send times one step
    -- apart from then, and a claim takes those that fall within the next second. A target whose
    -- second ahead is already given out is left alone: no lock, no write (every claim walks it, and
    -- a lock each time made the claims of all workers wait on one another).
    WITH locked AS (
      INSERT INTO webhook_rate_state AS s (endpoint_id, tat)
        SELECT en.id, NULL FROM webhook_endpoints en
        LEFT JOIN webhook_rate_state seen ON seen.endpoint_id = en.id
        WHERE en.id = ANY (walked) AND en.rate_limit IS NOT NULL
          AND (seen.tat IS NULL OR seen.tat < p_now + interval '1 second'
            - make_interval(secs => 1.0::double precision / (en.rate_limit * ${SPACING})))
        ORDER BY en.id
      ON CONFLICT (endpoint_id) DO UPDATE SET tat = s.tat
      RETURNING s.endpoint_id, s.tat
    )
    SELECT array_agg(st.endpoint_id), array_agg(st.start), array_agg(st.step),
      array_agg(GREATEST(0, floor(extract(epoch FROM (p_now + interval '1 second' - st.start))
        / extract(epoch FROM st.step)))::int)
    INTO lim_ids, lim_start, lim_step, lim_allow
    FROM (
      SELECT l.endpoint_id, GREATEST(l.tat, p_now + interval '100 milliseconds') AS start,
        make_interval(secs => 1.0::double precision / (en.rate_limit * ${SPACING})) AS step
      FROM locked l JOIN webhook_endpoints en ON en.id = l.endpoint_id
    ) st;
    -- Each target with room here and not paused by its receiver: its oldest due rows that are
    -- first in their shipment's line (if in one), up to that room and its rate limit's allowance
    -- (none for a limited target left alone above; LEAST passes over the NULL of an unlimited
    -- one: migration 0034 capped those at p_per_endpoint whatever their room, which cut one busy
    -- endpoint's rate to a sixth), skipping rows another worker is locking.
    SELECT array_agg(c.delivery_id), array_agg(c.delivery_id) FILTER (WHERE c.in_line) INTO ids, lined FROM (
      SELECT x.delivery_id, x.in_line
      FROM unnest(walked) WITH ORDINALITY AS w(e, n)
      JOIN webhook_endpoints en ON en.id = w.e AND en.enabled AND NOT en.held
        AND (p_targets IS NOT NULL OR en.kind <> 'listener')
        AND (en.paused_until IS NULL OR en.paused_until <= p_now)
      LEFT JOIN unnest(p_room_ids, p_room_left) AS r(e, left_over) ON r.e = w.e
      LEFT JOIN unnest(lim_ids, lim_allow) AS lim(e, allow) ON lim.e = w.e
      CROSS JOIN LATERAL (
        SELECT q.delivery_id, q.shipment_id IS NOT NULL AS in_line FROM webhook_queue q
        WHERE q.endpoint_id = w.e AND q.next_attempt_at <= p_now
          AND (q.locked_until IS NULL OR q.locked_until < p_now)
          AND (q.shipment_id IS NULL OR NOT EXISTS (
            SELECT 1 FROM webhook_queue ahead
            WHERE ahead.endpoint_id = q.endpoint_id AND ahead.shipment_id = q.shipment_id AND ahead.seq < q.seq))
        ORDER BY q.next_attempt_at
        LIMIT LEAST(COALESCE(r.left_over, p_per_endpoint), CASE WHEN en.rate_limit IS NOT NULL THEN COALESCE(lim.allow, 0) END)
        FOR UPDATE OF q SKIP LOCKED
      ) x
      WHERE LEAST(COALESCE(r.left_over, p_per_endpoint), CASE WHEN en.rate_limit IS NOT NULL THEN COALESCE(lim.allow, 0) END) > 0
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
        lined IS NOT NULL AND d.id = ANY (lined),
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
      NULL::text, NULL::timestamptz, NULL::boolean, last_walked, ended;
  END IF;
END
$fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    SEQUENCE,
    COLUMNS,
    LINE_INDEX,
    ORDERED_INDEX,
    TARGETS_VIEW,
    QUEUE_FOLLOW_IN_ORDER,
    FAN_OUT_IN_ORDER,
    `DROP FUNCTION ${CLAIM_SIGNATURE}`,
    CLAIM,
  ]);
  // Functions made or replaced here run with the fixed search_path of migration 0040.
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `DROP FUNCTION ${CLAIM_SIGNATURE}`,
    CLAIM_BEFORE,
    fanOut(GRANT_ALLOWS),
    QUEUE_FOLLOW.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'),
    'DROP VIEW delivery_targets',
    TARGETS_VIEW.replace('CREATE OR REPLACE VIEW', 'CREATE VIEW').replace(', e.ordering', ''),
    'DROP INDEX webhook_endpoints_ordered',
    'ALTER TABLE webhook_queue DROP COLUMN seq, DROP COLUMN shipment_id',
    'DROP SEQUENCE webhook_queue_order',
  ]);
  await setSearchPath(db, true);
}

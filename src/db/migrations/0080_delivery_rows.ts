import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { DESTINATION_PREFIX } from './0070_destinations.ts';
import { runStatements } from './sql.ts';

/**
 * The delivery tables built once for issues 41 and 42 (decision 0074): a delivery's life is one
 * row's, and every delivery table is keyed by its company.
 *
 * - **One write path per delivery.** The queue (`webhook_queue`, kept by three statement
 *   triggers on the log since migration 0014) becomes the pending part of the log: a delivery is
 *   inserted due (`due_at`), leased (`locked_by`, `locked_until`: no indexed column, so HOT) and
 *   finished (`due_at` NULL) in its own row. The claim's index holds only rows with a `due_at`.
 *   `due_at` is the queue's time: the delivery's own `next_attempt_at`, or later while it waits
 *   behind its shipment's line (`line_shipment_id`, `line_seq`). A CHECK keeps the two in step,
 *   so that a writer that forgets `due_at` fails at once instead of losing a delivery.
 * - **No triggers.** The functions that write deliveries do what the queue's triggers did; an
 *   endpoint's attempts go with it by a foreign key instead of a row trigger.
 * - **`tenant_id` in every key** (ARCHITECTURE.md's four rules, for Citus): endpoints, deliveries,
 *   attempts and rate state carry their company, and it is in each primary and unique key, last,
 *   so that every lookup by id alone stays one index probe on one PostgreSQL. An app subscription's
 *   targets belong to the installing company; an app's events target is a tenant of its own, named
 *   by the app's id (it belongs to no company).
 *
 * One-way: the rows cannot be put back into a queue that triggers kept without the triggers'
 * history; restore a backup to go back.
 */
const ENDPOINTS = [
  `UPDATE webhook_endpoints e SET tenant_id = i.tenant_id
    FROM installations i WHERE e.kind = 'subscription' AND e.tenant_id IS NULL AND i.id = e.installation_id`,
  `UPDATE webhook_endpoints SET tenant_id = app_id WHERE kind = 'app_events' AND tenant_id IS NULL`,
  // Nothing else can be without a company; a row that is would fail the NOT NULL below.
  'ALTER TABLE webhook_endpoints DROP CONSTRAINT IF EXISTS webhook_endpoints_tenant_id_fkey',
  'ALTER TABLE webhook_endpoints ALTER COLUMN tenant_id SET NOT NULL',
  'ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_fkey',
  'ALTER TABLE webhook_rate_state DROP CONSTRAINT webhook_rate_state_endpoint_id_fkey',
  'ALTER TABLE webhook_endpoints DROP CONSTRAINT IF EXISTS webhook_endpoints_installation_fk',
  'ALTER TABLE webhook_endpoints DROP CONSTRAINT IF EXISTS webhook_endpoints_customer_account_id_fkey',
  'ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey',
  'ALTER TABLE webhook_endpoints ADD PRIMARY KEY (id, tenant_id)',
  'DROP INDEX webhook_endpoints_app_events',
  `CREATE UNIQUE INDEX webhook_endpoints_app_events ON webhook_endpoints (app_id, tenant_id)
    WHERE kind = 'app_events'`,
  'DROP INDEX webhook_endpoints_subscriptions',
  `CREATE UNIQUE INDEX webhook_endpoints_subscriptions
    ON webhook_endpoints (installation_id, subscription_index, livemode, tenant_id) WHERE kind = 'subscription'`,
  `ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_installation_fk
    FOREIGN KEY (installation_id, tenant_id) REFERENCES installations (id, tenant_id) ON DELETE CASCADE`,
  `ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_customer_account_id_fkey
    FOREIGN KEY (customer_account_id, tenant_id) REFERENCES customer_accounts (id, tenant_id) ON DELETE CASCADE`,
  'DROP TRIGGER webhook_attempts_of_endpoint_deleted ON webhook_endpoints',
  'DROP FUNCTION webhook_attempts_of_endpoint_deleted()',
];

const DELIVERIES = [
  'DROP TRIGGER webhook_queue_on_insert ON webhook_deliveries',
  'DROP TRIGGER webhook_queue_on_update ON webhook_deliveries',
  'DROP TRIGGER webhook_queue_on_delete ON webhook_deliveries',
  'DROP FUNCTION webhook_queue_follow()',
  `ALTER TABLE webhook_deliveries ADD COLUMN tenant_id text, ADD COLUMN due_at timestamptz,
    ADD COLUMN locked_by text, ADD COLUMN locked_until timestamptz,
    ADD COLUMN line_shipment_id text, ADD COLUMN line_seq bigint`,
  // One pass over the log: its company, and the queue's part for the rows still queued.
  `UPDATE webhook_deliveries d SET tenant_id = s.tenant_id, due_at = s.due_at, locked_by = s.locked_by,
    locked_until = s.locked_until, line_shipment_id = s.shipment_id, line_seq = s.seq
    FROM (
      SELECT d2.id, e.tenant_id, q.next_attempt_at AS due_at, q.locked_by, q.locked_until, q.shipment_id, q.seq
      FROM webhook_deliveries d2
      JOIN webhook_endpoints e ON e.id = d2.endpoint_id
      LEFT JOIN webhook_queue q ON q.delivery_id = d2.id
    ) s
    WHERE s.id = d.id`,
  // A pending row the triggers missed (none should be) is queued at its own time.
  `UPDATE webhook_deliveries SET due_at = next_attempt_at
    WHERE status = 'pending' AND next_attempt_at IS NOT NULL AND due_at IS NULL`,
  `UPDATE webhook_deliveries SET due_at = NULL, line_shipment_id = NULL, line_seq = NULL
    WHERE due_at IS NOT NULL AND (status <> 'pending' OR next_attempt_at IS NULL)`,
  'DELETE FROM webhook_deliveries WHERE tenant_id IS NULL',
  'ALTER TABLE webhook_deliveries ALTER COLUMN tenant_id SET NOT NULL',
  `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_queued
    CHECK ((due_at IS NOT NULL) = (status = 'pending' AND next_attempt_at IS NOT NULL))`,
  'ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey',
  'ALTER TABLE webhook_deliveries ADD PRIMARY KEY (id, tenant_id)',
  `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_fk
    FOREIGN KEY (endpoint_id, tenant_id) REFERENCES webhook_endpoints (id, tenant_id) ON DELETE CASCADE`,
  // The claim's: the walk over targets with queued rows and each target's due rows in time order.
  `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, due_at) WHERE due_at IS NOT NULL`,
  // An ordered target's lines: who is ahead of a row in its shipment's line.
  `CREATE INDEX webhook_deliveries_line ON webhook_deliveries (endpoint_id, line_shipment_id, line_seq)
    WHERE due_at IS NOT NULL AND line_shipment_id IS NOT NULL`,
  'DROP TABLE webhook_queue',
];

const ATTEMPTS_AND_RATES = [
  'ALTER TABLE webhook_attempts ADD COLUMN tenant_id text',
  `UPDATE webhook_attempts a SET tenant_id = e.tenant_id FROM webhook_endpoints e WHERE e.id = a.endpoint_id`,
  // An endpoint's attempts went with it by a trigger: none without one is kept.
  'DELETE FROM webhook_attempts WHERE tenant_id IS NULL',
  'ALTER TABLE webhook_attempts ALTER COLUMN tenant_id SET NOT NULL',
  'ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey',
  'ALTER TABLE webhook_attempts ADD PRIMARY KEY (id, attempted_at, tenant_id)',
  `ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_endpoint_fk
    FOREIGN KEY (endpoint_id, tenant_id) REFERENCES webhook_endpoints (id, tenant_id) ON DELETE CASCADE`,
  'ALTER TABLE webhook_rate_state ADD COLUMN tenant_id text',
  `UPDATE webhook_rate_state s SET tenant_id = e.tenant_id FROM webhook_endpoints e WHERE e.id = s.endpoint_id`,
  'DELETE FROM webhook_rate_state WHERE tenant_id IS NULL',
  'ALTER TABLE webhook_rate_state ALTER COLUMN tenant_id SET NOT NULL',
  'ALTER TABLE webhook_rate_state DROP CONSTRAINT webhook_rate_state_pkey',
  'ALTER TABLE webhook_rate_state ADD PRIMARY KEY (endpoint_id, tenant_id)',
  `ALTER TABLE webhook_rate_state ADD CONSTRAINT webhook_rate_state_endpoint_fk
    FOREIGN KEY (endpoint_id, tenant_id) REFERENCES webhook_endpoints (id, tenant_id) ON DELETE CASCADE`,
];

const VIEWS = [
  // The targets' company, so that a statement on Citus can name it (the claim per tenant).
  `CREATE OR REPLACE VIEW delivery_targets AS
    SELECT e.id, e.kind, e.app_id, e.enabled, e.held, e.failing_since,
      CASE WHEN e.destination_sealed IS NOT NULL THEN '${DESTINATION_PREFIX}' || e.destination_sealed
        WHEN e.kind = 'app_events' THEN COALESCE(a.events_url, e.url) ELSE e.url END AS url,
      COALESCE(a.events_secret_sealed, e.secret_sealed) AS secret_sealed,
      CASE WHEN a.id IS NOT NULL THEN a.events_previous_secret_sealed ELSE e.previous_secret_sealed END
        AS previous_secret_sealed,
      CASE WHEN a.id IS NOT NULL THEN a.events_previous_secret_expires_at ELSE e.previous_secret_expires_at END
        AS previous_secret_expires_at,
      e.headers_sealed, e.ordering, e.tenant_id
    FROM webhook_endpoints e
    LEFT JOIN apps a ON e.kind IN ('app_events', 'subscription') AND a.id = e.app_id`,
  `CREATE OR REPLACE VIEW webhook_attempt_log AS
    SELECT id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error, response_body, trigger,
      request_headers, attempted_at AS indexed_at, tenant_id
    FROM webhook_attempts
    UNION ALL
    SELECT first_attempt_id, id, endpoint_id, first_attempt_at, first_attempt_ms, first_attempt_code, NULL::text,
      first_attempt_body, 'scheduled'::text, first_attempt_headers, created_at, tenant_id
    FROM webhook_deliveries WHERE first_attempt_id IS NOT NULL`,
];

/** A row's new id: dlv_ + the time in 8 characters + 14 characters of [0-9A-Za-z] (migration 0018). */
const DELIVERY_ID = `'dlv_' || stamp || substr(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 14)`;

/**
 * The rows just made for ordered targets join their shipments' lines, in the order of their events
 * (`lined_ids`, `lined_shipments`), due no sooner than what is ahead of them.
 */
const JOIN_LINES = `
  IF lined_ids IS NOT NULL THEN
    -- The numbers first: Citus takes no volatile function in an UPDATE.
    SELECT array_agg(nextval('webhook_queue_order') ORDER BY u.n) INTO lined_seqs
    FROM unnest(lined_ids) WITH ORDINALITY AS u(id, n);
    UPDATE webhook_deliveries q SET line_shipment_id = l.s, line_seq = l.seq,
      due_at = GREATEST(q.due_at, COALESCE((
        SELECT max(p.due_at) FROM webhook_deliveries p
        WHERE p.endpoint_id = q.endpoint_id AND p.line_shipment_id = l.s AND p.due_at IS NOT NULL/*T:p*/), q.due_at))
    FROM unnest(lined_ids, lined_shipments, lined_seqs) AS l(id, s, seq)
    WHERE q.id = l.id/*T:q*/;
  END IF;`;

/** Which of the rows made (`made`) are for ordered targets, with their events' shipments. */
const LINED_OF_MADE = `
  SELECT count(*)::int,
    array_agg(m.id ORDER BY i.n, m.id) FILTER (WHERE lined.shipment_id IS NOT NULL),
    array_agg(lined.shipment_id ORDER BY i.n, m.id) FILTER (WHERE lined.shipment_id IS NOT NULL)
  INTO %COUNT%, lined_ids, lined_shipments
  FROM made m
  JOIN unnest(p_event_ids) WITH ORDINALITY AS i(id, n) ON i.id = m.event_id
  -- The event's shipment, for an ordered target's message: read by key (the LIMIT keeps it a
  -- nested index probe, never a hash over a month of events).
  LEFT JOIN LATERAL (
    SELECT stored.shipment_id FROM events stored
    WHERE stored.id = m.event_id/*T:stored*/
      AND EXISTS (SELECT 1 FROM webhook_endpoints o WHERE o.id = m.endpoint_id AND o.ordering = 'per_shipment'/*T:o*/)
    LIMIT 1
  ) lined ON true;`;

const ENDPOINT_ROWS = `
    INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, payload, status,
      attempt_count, next_attempt_at, due_at, created_at, updated_at)
    SELECT ${DELIVERY_ID}, e.tenant_id,
      -- No payload: the delivery reads its event's (migration 0016).
      e.id, ev.id, ev.type, NULL, 'pending', 0, p_now, p_now, p_now, p_now
    FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts)
      AS ev(id, type, tenant_id, livemode, customer_account_id)
    JOIN webhook_endpoints e
      ON e.tenant_id = ev.tenant_id/*T:e*/
      AND e.kind <> 'subscription'
      AND e.livemode = ev.livemode
      AND e.enabled
      AND e.event_types @> jsonb_build_array(ev.type)
      AND (e.customer_account_id IS NULL OR e.customer_account_id = ev.customer_account_id)
    WHERE (e.installation_id IS NULL OR EXISTS (
      SELECT 1 FROM installation_grants g
      WHERE g.installation_id = e.installation_id AND g.tenant_id = ev.tenant_id/*T:g*/ AND g.held_reason IS NULL
        AND scopes_allow(g.scopes, event_type_scope(ev.type))
    )) AND (e.filter_path IS NULL OR EXISTS (
      SELECT 1 FROM events stored
      WHERE stored.id = ev.id/*T:stored*/
        AND jsonb_path_match(stored.payload::jsonb, e.filter_path, COALESCE(e.filter_vars, '{}'::jsonb), true) IS TRUE
    ))`;

const SUBSCRIPTION_ROWS = `
    INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_id, event_type, payload, status,
      attempt_count, next_attempt_at, due_at, created_at, updated_at)
    SELECT ${DELIVERY_ID}, e.tenant_id, e.id, ev.id, ev.type,
      '{"installation_id":' || to_json(g.installation_id)::text || ',' || substr(stored.payload, 2),
      'pending', 0, p_now, p_now, p_now, p_now
    FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts)
      AS ev(id, type, tenant_id, livemode, customer_account_id)
    CROSS JOIN LATERAL (
      SELECT grants.installation_id FROM installation_grants grants
      JOIN installations inst ON inst.id = grants.installation_id AND inst.tenant_id = grants.tenant_id/*T:inst*/
      WHERE grants.tenant_id = ev.tenant_id/*T:grants*/
        AND grants.held_reason IS NULL
        AND (grants.customer_account_id IS NULL OR grants.customer_account_id = ev.customer_account_id)
        AND scopes_allow(grants.scopes, event_type_scope(ev.type))
        AND NOT (inst.muted_event_types @> jsonb_build_array(ev.type))
      OFFSET 0
    ) g
    CROSS JOIN LATERAL (
      SELECT t.id, t.tenant_id, t.filter_path, t.filter_vars FROM webhook_endpoints t
      WHERE t.kind = 'subscription'
        AND t.tenant_id = ev.tenant_id/*T:t*/
        AND t.installation_id = g.installation_id
        AND t.livemode = ev.livemode
        AND t.enabled
        AND t.event_types @> jsonb_build_array(ev.type)
      OFFSET 0
    ) e
    JOIN events stored ON stored.id = ev.id/*T:stored*/
    WHERE e.filter_path IS NULL
      OR jsonb_path_match(stored.payload::jsonb, e.filter_path, COALESCE(e.filter_vars, '{}'::jsonb), true) IS TRUE`;

export const FAN_OUT_ENDPOINTS = `
CREATE OR REPLACE FUNCTION webhook_fan_out_endpoints/*FN*/(p_event_ids text[], p_types text[], p_tenants text[],
  p_livemodes boolean[], p_accounts text[], p_now timestamptz) RETURNS integer
LANGUAGE plpgsql/*PLAN*/ AS $$
DECLARE
  inserted int;
  stamp text := waybill_id_time(clock_timestamp());
  lined_ids text[];
  lined_shipments text[];
  lined_seqs bigint[];
BEGIN
  -- A statement, not an expression: Citus plans a query in a shard, not a sublink in an IF.
  PERFORM 1 FROM webhook_endpoints o
    WHERE o.ordering = 'per_shipment' AND o.kind <> 'subscription' AND o.tenant_id = ANY (p_tenants)/*T:o*/ LIMIT 1;
  IF NOT FOUND THEN
    ${ENDPOINT_ROWS};
    GET DIAGNOSTICS inserted = ROW_COUNT;
    RETURN inserted;
  END IF;
  WITH made AS (
    ${ENDPOINT_ROWS}
    RETURNING id, endpoint_id, event_id
  )
  ${LINED_OF_MADE.replace('%COUNT%', 'inserted')}
  ${JOIN_LINES}
  RETURN inserted;
END $$`;

export const FAN_OUT = `
CREATE OR REPLACE FUNCTION webhook_fan_out/*FN*/(p_event_ids text[], p_types text[], p_tenants text[],
  p_livemodes boolean[], p_accounts text[], p_now timestamptz) RETURNS integer
LANGUAGE plpgsql/*PLAN*/ AS $$
DECLARE
  inserted int;
  subscribed int := 0;
  stamp text := waybill_id_time(clock_timestamp());
  lined_ids text[];
  lined_shipments text[];
  lined_seqs bigint[];
BEGIN
  inserted := webhook_fan_out_endpoints/*CALL*/(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts, p_now);
  -- Subscriptions only where the company has an app's subscription target: one index probe otherwise.
  PERFORM 1 FROM webhook_endpoints s WHERE s.tenant_id = ANY (p_tenants)/*T:s*/ AND s.kind = 'subscription' LIMIT 1;
  IF FOUND THEN
    PERFORM 1 FROM webhook_endpoints s
      WHERE s.tenant_id = ANY (p_tenants)/*T:s*/ AND s.kind = 'subscription' AND s.ordering = 'per_shipment' LIMIT 1;
    IF NOT FOUND THEN
      ${SUBSCRIPTION_ROWS};
      GET DIAGNOSTICS subscribed = ROW_COUNT;
    ELSE
      WITH made AS (
        ${SUBSCRIPTION_ROWS}
        RETURNING id, endpoint_id, event_id
      )
      ${LINED_OF_MADE.replace('%COUNT%', 'subscribed')}
      ${JOIN_LINES}
    END IF;
  END IF;
  RETURN inserted + subscribed;
END $$`;

/**
 * A fan-out function for one PostgreSQL, or its twin for Citus (`_tenant`, decision 0074): the
 * events of one company (`p_tenant`, first), each statement naming it so that it runs in the
 * company's shard alone.
 */
export function fanOutFunction(text: string, perTenant: boolean): string {
  return (
    text
      .replaceAll(/\/\*T:(\w+)\*\//g, (_m, alias: string) =>
        perTenant ? ` AND ${alias}.tenant_id = p_tenant` : '',
      )
      .replace('/*FN*/(', perTenant ? '_tenant(p_tenant text, ' : '(')
      .replace('/*CALL*/(', perTenant ? '_tenant(p_tenant, ' : '(')
      // One plan kept for every call on one PostgreSQL; Citus plans each call for its tenant's shard.
      .replace('/*PLAN*/', perTenant ? '' : " SET plan_cache_mode TO 'force_generic_plan'")
  );
}

/**
 * Rows that left the queue from lines (`p_endpoints`, `p_shipments`): the line's new head is due
 * at its own time, and what waits behind it no sooner than the head.
 */
const LINES_FOLLOW = `
CREATE OR REPLACE FUNCTION webhook_lines_follow(p_endpoints text[], p_shipments text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- Each row read by its key (the LIMIT keeps each lookup a nested index probe).
  UPDATE webhook_deliveries f SET due_at = t.due
  FROM (
    SELECT line.id,
      CASE WHEN line.line_seq = h.line_seq THEN line.next_attempt_at
        ELSE GREATEST(line.next_attempt_at, h.next_attempt_at) END AS due
    FROM (SELECT DISTINCT g.e, g.s FROM unnest(p_endpoints, p_shipments) AS g(e, s)) g
    CROSS JOIN LATERAL (
      SELECT x.line_seq, x.next_attempt_at FROM webhook_deliveries x
      WHERE x.endpoint_id = g.e AND x.line_shipment_id = g.s AND x.due_at IS NOT NULL ORDER BY x.line_seq LIMIT 1
    ) h
    JOIN webhook_deliveries line ON line.endpoint_id = g.e AND line.line_shipment_id = g.s AND line.due_at IS NOT NULL
  ) t
  WHERE f.id = t.id AND f.due_at IS DISTINCT FROM t.due;
END $$`;

function recordFunction(perTenant: boolean): string {
  const t = (alias: string) => (perTenant ? ` AND ${alias}.tenant_id = p_tenant` : '');
  return `
CREATE FUNCTION ${perTenant ? 'webhook_record_attempts_tenant(p_tenant text, ' : 'webhook_record_attempts('}a_id text[], a_delivery text[], a_tenant text[], a_endpoint text[],
  a_at timestamptz[], a_duration int[], a_code int[], a_error text[], a_body text[], a_trigger text[],
  a_headers text[], c_id text[], c_status text[], c_next timestamptz[], c_code int[], c_at timestamptz[],
  c_only_pending boolean[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  kept text[];
  left_endpoints text[];
  left_shipments text[];
  retried text[];
BEGIN
  -- Each delivery's outcome, and its place in the queue in the same row: finished, it leaves;
  -- due again at a new time (a retry), it is queued then with no lease; otherwise (a replay's
  -- attempt) its place and lease stay. A scheduled attempt changes only a delivery still pending:
  -- a disable may have cancelled it. The attempts come in the order of the changes, one each. A
  -- first attempt answered 2xx within a day is kept in its delivery (migration 0065); the day is
  -- measured by subtraction (immutable), as Citus allows in a CASE, not by adding an interval.
  WITH changed AS (
    UPDATE webhook_deliveries AS d SET
      status = COALESCE(v.status, d.status),
      next_attempt_at = CASE WHEN v.status IS NULL THEN d.next_attempt_at ELSE v.next_at END,
      -- Finished: out of the queue. Due at a new time (a retry): queued then, with no lease.
      -- Neither (a replay's attempt): its place and its lease stay.
      due_at = CASE WHEN v.status IS NULL THEN d.due_at
        WHEN v.status <> 'pending' OR v.next_at IS NULL THEN NULL
        WHEN d.status <> 'pending' OR d.next_attempt_at IS DISTINCT FROM v.next_at THEN v.next_at
        ELSE d.due_at END,
      locked_by = CASE WHEN v.status IS NULL
        OR (v.status = 'pending' AND d.status = 'pending' AND d.next_attempt_at IS NOT DISTINCT FROM v.next_at)
        THEN d.locked_by END,
      locked_until = CASE WHEN v.status IS NULL
        OR (v.status = 'pending' AND d.status = 'pending' AND d.next_attempt_at IS NOT DISTINCT FROM v.next_at)
        THEN d.locked_until END,
      attempt_count = d.attempt_count + 1,
      last_status_code = v.code,
      last_attempt_at = v.at,
      updated_at = v.at,
      first_attempt_id = CASE WHEN v.keep AND d.attempt_count = 0 AND v.at >= d.created_at
        AND v.at - d.created_at < interval '1 day' THEN v.attempt_id ELSE d.first_attempt_id END,
      first_attempt_at = CASE WHEN v.keep AND d.attempt_count = 0 AND v.at >= d.created_at
        AND v.at - d.created_at < interval '1 day' THEN v.at ELSE d.first_attempt_at END,
      first_attempt_ms = CASE WHEN v.keep AND d.attempt_count = 0 AND v.at >= d.created_at
        AND v.at - d.created_at < interval '1 day' THEN v.duration ELSE d.first_attempt_ms END,
      first_attempt_code = CASE WHEN v.keep AND d.attempt_count = 0 AND v.at >= d.created_at
        AND v.at - d.created_at < interval '1 day' THEN v.code ELSE d.first_attempt_code END,
      first_attempt_body = CASE WHEN v.keep AND d.attempt_count = 0 AND v.at >= d.created_at
        AND v.at - d.created_at < interval '1 day' THEN decode(v.body, 'hex') ELSE d.first_attempt_body END,
      first_attempt_headers = CASE WHEN v.keep AND d.attempt_count = 0 AND v.at >= d.created_at
        AND v.at - d.created_at < interval '1 day' THEN v.headers::jsonb ELSE d.first_attempt_headers END
    FROM (
      SELECT c.*, a.attempt_id, a.tenant_id, a.duration, a.body, a.headers,
        a.trigger = 'scheduled' AND c.code BETWEEN 200 AND 299 AND a.delivery_id = c.id AS keep
      FROM unnest(c_id, c_status, c_next, c_code, c_at, c_only_pending) WITH ORDINALITY
        AS c(id, status, next_at, code, at, only_pending, n)
      JOIN unnest(a_id, a_delivery, a_tenant, a_duration, a_body, a_trigger, a_headers) WITH ORDINALITY
        AS a(attempt_id, delivery_id, tenant_id, duration, body, trigger, headers, n) ON a.n = c.n
    ) v
    WHERE d.id = v.id AND d.tenant_id = v.tenant_id${t('d')} AND (NOT v.only_pending OR d.status = 'pending')
    RETURNING d.id, d.first_attempt_id, v.attempt_id, d.endpoint_id, d.line_shipment_id, d.due_at,
      d.next_attempt_at
  )
  SELECT array_agg(changed.attempt_id) FILTER (WHERE changed.first_attempt_id = changed.attempt_id),
    array_agg(changed.endpoint_id) FILTER (WHERE changed.line_shipment_id IS NOT NULL AND changed.due_at IS NULL),
    array_agg(changed.line_shipment_id) FILTER (WHERE changed.line_shipment_id IS NOT NULL AND changed.due_at IS NULL),
    array_agg(changed.id) FILTER (WHERE changed.line_shipment_id IS NOT NULL AND changed.due_at IS NOT NULL)
  INTO kept, left_endpoints, left_shipments, retried
  FROM changed;
  INSERT INTO webhook_attempts (id, tenant_id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code,
    error, response_body, trigger, request_headers)
  SELECT a.id, a.tenant_id, a.delivery_id, a.endpoint_id, a.attempted_at, a.duration_ms, a.status_code, a.error,
    decode(a.response_body, 'hex'), a.trigger, a.request_headers::jsonb
  FROM unnest(a_id, a_tenant, a_delivery, a_endpoint, a_at, a_duration, a_code, a_error, a_body, a_trigger, a_headers)
    AS a(id, tenant_id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error, response_body,
    trigger, request_headers)
  WHERE kept IS NULL OR a.id <> ALL (kept);
  -- Out of its line: the next of its shipment moves up.
  IF left_endpoints IS NOT NULL THEN
    PERFORM webhook_lines_follow(left_endpoints, left_shipments);
  END IF;
  -- A retry in a shipment's line: what waits behind it is due no sooner.
  IF retried IS NOT NULL THEN
    UPDATE webhook_deliveries f SET due_at = h.due_at
    FROM webhook_deliveries h
    WHERE h.id = ANY (retried) AND h.due_at IS NOT NULL AND f.endpoint_id = h.endpoint_id${t('h')}${t('f')}
      AND f.line_shipment_id = h.line_shipment_id AND f.due_at IS NOT NULL AND f.line_seq > h.line_seq
      AND f.due_at < h.due_at;
  END IF;
END $$`;
}

/**
 * The claim's rate-limit step as this migration wrote it (migration 0082 replaces it): each limited
 * target's arrival time, locked by a data-modifying CTE.
 */
export const RATE_LIMIT_STEP = (t: (alias: string) => string) => `    WITH locked AS (
      INSERT INTO webhook_rate_state AS s (endpoint_id, tenant_id, tat)
        SELECT en.id, en.tenant_id, NULL FROM webhook_endpoints en
        LEFT JOIN webhook_rate_state seen ON seen.endpoint_id = en.id AND seen.tenant_id = en.tenant_id
        WHERE en.id = ANY (walked) AND en.rate_limit IS NOT NULL${t('en')}
          AND (seen.tat IS NULL OR seen.tat < p_now + interval '1 second'
            - make_interval(secs => 1.0::double precision / (en.rate_limit * 0.9)))
        ORDER BY en.id
      ON CONFLICT (endpoint_id, tenant_id) DO UPDATE SET tat = s.tat
      RETURNING s.endpoint_id, s.tat
    )
    SELECT array_agg(st.endpoint_id), array_agg(st.start), array_agg(st.step),
      array_agg(GREATEST(0, floor(extract(epoch FROM (p_now + interval '1 second' - st.start))
        / extract(epoch FROM st.step)))::int)
    INTO lim_ids, lim_start, lim_step, lim_allow
    FROM (
      SELECT l.endpoint_id, GREATEST(l.tat, p_now + interval '100 milliseconds') AS start,
        make_interval(secs => 1.0::double precision / (en.rate_limit * 0.9)) AS step
      FROM locked l JOIN webhook_endpoints en ON en.id = l.endpoint_id${t('en')}
    ) st;
`;

export function claimFunction(perTenant: boolean): string {
  /** On Citus, every statement names the tenant: each runs in that tenant's shard alone. */
  const t = (alias: string) => (perTenant ? ` AND ${alias}.tenant_id = p_tenant` : '');
  return `
CREATE FUNCTION ${perTenant ? 'webhook_claim_tenant(p_tenant text, ' : 'webhook_claim('}p_worker text, p_now timestamptz, p_lease_until timestamptz, p_limit int,
  p_per_endpoint int, p_room_ids text[], p_room_left int[], p_after text, p_visits int, p_targets text[])
RETURNS TABLE(id text, tenant_id text, endpoint_id text, event_id text, event_type text, payload text, status text,
  attempt_count integer, next_attempt_at timestamptz, kind text, url text, secret_sealed text,
  previous_secret_sealed text, previous_secret_expires_at timestamptz, failing_since timestamptz,
  headers_sealed text, send_at timestamptz, in_line boolean, walked_to text, walk_ended boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  walked text[];
  ids text[];
  leased tid[];
  lined text[];
  last_walked text;
  ended boolean;
  lim_ids text[];
  lim_start timestamptz[];
  lim_step interval[];
  lim_allow int[];
  tat_ids text[];
  tat_values timestamptz[];
BEGIN
  -- The walk (decision 0016): the next targets with queued deliveries after p_after, one index
  -- descent each; or, for the listener hub, the targets it names.
  IF p_targets IS NULL THEN
    WITH RECURSIVE walk(e, n) AS (
      SELECT (SELECT min(q.endpoint_id) FROM webhook_deliveries q WHERE q.due_at IS NOT NULL AND q.endpoint_id > p_after${t('q')}), 1
      UNION ALL
      SELECT (SELECT min(q.endpoint_id) FROM webhook_deliveries q WHERE q.due_at IS NOT NULL AND q.endpoint_id > w.e${t('q')}),
        w.n + 1
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
    -- second ahead is already given out is left alone: no lock, no write. The pace is 90 % of the
    -- limit (95 % before 0080): the margin absorbs a loaded sender's lateness, measured at the receiver.
${RATE_LIMIT_STEP(t)}    -- Each target with room here and not paused by its receiver: its oldest due rows that are
    -- first in their shipment's line (if in one), up to that room and its rate limit's allowance,
    -- skipping rows another worker is locking.
    SELECT array_agg(c.id), array_agg(c.id) FILTER (WHERE c.in_line), array_agg(c.row_address)
      INTO ids, lined, leased FROM (
      SELECT x.id, x.in_line, x.row_address
      FROM unnest(walked) WITH ORDINALITY AS w(e, n)
      JOIN webhook_endpoints en ON en.id = w.e AND en.enabled AND NOT en.held${t('en')}
        AND (p_targets IS NOT NULL OR en.kind <> 'listener')
        AND (en.paused_until IS NULL OR en.paused_until <= p_now)
      LEFT JOIN unnest(p_room_ids, p_room_left) AS r(e, left_over) ON r.e = w.e
      LEFT JOIN unnest(lim_ids, lim_allow) AS lim(e, allow) ON lim.e = w.e
      CROSS JOIN LATERAL (
        SELECT q.id, q.line_shipment_id IS NOT NULL AS in_line, q.ctid AS row_address FROM webhook_deliveries q
        WHERE q.endpoint_id = w.e AND q.due_at IS NOT NULL AND q.due_at <= p_now${t('q')}
          AND (q.locked_until IS NULL OR q.locked_until < p_now)
          AND (q.line_shipment_id IS NULL OR NOT EXISTS (
            SELECT 1 FROM webhook_deliveries ahead
            WHERE ahead.endpoint_id = q.endpoint_id AND ahead.line_shipment_id = q.line_shipment_id
              AND ahead.due_at IS NOT NULL AND ahead.line_seq < q.line_seq${t('ahead')}))
        ORDER BY q.due_at
        LIMIT LEAST(COALESCE(r.left_over, p_per_endpoint), CASE WHEN en.rate_limit IS NOT NULL THEN COALESCE(lim.allow, 0) END)
        FOR UPDATE OF q SKIP LOCKED
      ) x
      WHERE LEAST(COALESCE(r.left_over, p_per_endpoint), CASE WHEN en.rate_limit IS NOT NULL THEN COALESCE(lim.allow, 0) END) > 0
      LIMIT p_limit
    ) c;
  END IF;
  IF ids IS NOT NULL THEN
    -- The limited targets' arrival times move on by the messages claimed for them.
    IF lim_ids IS NOT NULL THEN
      -- Computed first: Citus takes no time arithmetic on columns in an UPDATE.
      SELECT array_agg(l.e), array_agg(l.start + c.k * l.step) INTO tat_ids, tat_values
      FROM unnest(lim_ids, lim_start, lim_step) AS l(e, start, step)
      JOIN (SELECT q.endpoint_id AS e, count(*)::int AS k FROM webhook_deliveries q
        WHERE q.ctid = ANY (leased)${t('q')} GROUP BY q.endpoint_id) c ON c.e = l.e;
      UPDATE webhook_rate_state s SET tat = u.tat FROM unnest(tat_ids, tat_values) AS u(e, tat)
      WHERE s.endpoint_id = u.e${t('s')};
    END IF;
    -- The lease, by the addresses of the rows locked above (a TID scan, whatever the plan kept),
    -- returns the rows themselves: in the order claimed, target by target in the walk's order,
    -- oldest first within each.
    RETURN QUERY
      WITH lease AS (
        UPDATE webhook_deliveries q SET locked_by = p_worker, locked_until = p_lease_until
        WHERE q.ctid = ANY (leased)${t('q')}
        RETURNING q.id, q.tenant_id, q.endpoint_id, q.event_id, q.event_type, q.payload, q.status,
          q.attempt_count, q.next_attempt_at
      )
      SELECT d.id, d.tenant_id, d.endpoint_id, d.event_id, d.event_type,
        COALESCE(d.payload, (SELECT ev.payload FROM events ev WHERE ev.id = d.event_id AND ev.tenant_id = d.tenant_id${t('ev')})),
        d.status,
        d.attempt_count, d.next_attempt_at,
        t.kind, t.url, t.secret_sealed, t.previous_secret_sealed, t.previous_secret_expires_at, t.failing_since,
        t.headers_sealed,
        CASE WHEN lim_ids IS NULL THEN NULL::timestamptz
          ELSE l.start + (row_number() OVER (PARTITION BY d.endpoint_id ORDER BY i.n) - 1) * l.step END,
        lined IS NOT NULL AND d.id = ANY (lined),
        last_walked, ended
      FROM unnest(ids) WITH ORDINALITY AS i(id, n)
      JOIN lease d ON d.id = i.id
      JOIN delivery_targets t ON t.id = d.endpoint_id${t('t')}
      LEFT JOIN unnest(lim_ids, lim_start, lim_step) AS l(e, start, step) ON l.e = d.endpoint_id
      ORDER BY i.n;
  END IF;
  IF ids IS NULL OR NOT FOUND THEN
    -- Nothing claimed (or what was claimed is gone): one row still tells where the walk got to.
    RETURN QUERY SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text,
      NULL::int, NULL::timestamptz, NULL::text, NULL::text, NULL::text, NULL::text, NULL::timestamptz,
      NULL::timestamptz, NULL::text, NULL::timestamptz, NULL::boolean, last_walked, ended;
  END IF;
END $$`;
}

const FUNCTIONS = [
  'DROP FUNCTION webhook_claim(text, timestamptz, timestamptz, int, int, text[], int[], text, int, text[])',
  `DROP FUNCTION webhook_record_attempts(text[], text[], text[], timestamptz[], int[], int[], text[], text[],
    text[], text[], text[], text[], timestamptz[], int[], timestamptz[], boolean[])`,
  fanOutFunction(FAN_OUT_ENDPOINTS, false),
  fanOutFunction(FAN_OUT_ENDPOINTS, true),
  fanOutFunction(FAN_OUT, false),
  fanOutFunction(FAN_OUT, true),
  LINES_FOLLOW,
  recordFunction(false),
  recordFunction(true),
  claimFunction(false),
  claimFunction(true),
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [...ENDPOINTS, ...DELIVERIES, ...ATTEMPTS_AND_RATES, ...VIEWS, ...FUNCTIONS]);
  await setSearchPath(db, true);
}

export async function down(): Promise<void> {
  throw new Error(
    'migration 0080 (delivery rows) is one-way: the queue its triggers kept cannot be rebuilt; restore a backup',
  );
}

import type { Kysely } from 'kysely';
import { RECORD } from './0015_claim_and_record_functions.ts';
import { setSearchPath } from './0040_function_search_path.ts';
import { runStatements } from './sql.ts';

/**
 * A first attempt that succeeds is kept in the delivery it completes (issue 34, decision 0060).
 * Most messages are delivered at their first attempt; each of them wrote an attempt row as well as
 * its delivery's outcome: a heap row in the day's partition, three index entries and the tuple
 * routing of a partitioned insert. Now the outcome's update (HOT: none of these columns is
 * indexed) carries that attempt, and `webhook_attempt_log` reads both kinds as one.
 *
 * Only a scheduled first attempt with a 2xx answer, made within a day of its delivery: failures
 * stay rows of their own (the failure streak and the stats' last failure read them there), and the
 * day's bound lets a read by time window find these by the delivery's own index
 * (`endpoint_id, created_at`). The log's `indexed_at` is that time: the attempt's for a row, the
 * delivery's making for an attempt kept in its delivery.
 */
const COLUMNS = `ALTER TABLE webhook_deliveries
  ADD COLUMN first_attempt_id text,
  ADD COLUMN first_attempt_at timestamptz,
  ADD COLUMN first_attempt_ms integer,
  ADD COLUMN first_attempt_code integer,
  ADD COLUMN first_attempt_body bytea,
  ADD COLUMN first_attempt_headers jsonb`;

/** The most a first attempt kept in its delivery comes after the delivery was made. */
const KEPT_WITHIN = `interval '1 day'`;

const LOG = `CREATE VIEW webhook_attempt_log AS
  SELECT id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error, response_body, trigger,
    request_headers, attempted_at AS indexed_at
  FROM webhook_attempts
  UNION ALL
  SELECT first_attempt_id, id, endpoint_id, first_attempt_at, first_attempt_ms, first_attempt_code, NULL::text,
    first_attempt_body, 'scheduled'::text, first_attempt_headers, created_at
  FROM webhook_deliveries WHERE first_attempt_id IS NOT NULL`;

/** The attempt's `value` when it is kept in its delivery (the delivery's first, a 2xx, within the bound). */
const kept = (value: string, column: string) =>
  `CASE WHEN v.keep AND d.attempt_count = 0 AND v.at >= d.created_at AND v.at < d.created_at + ${KEPT_WITHIN}
    THEN ${value} ELSE d.${column} END`;

const RECORD_KEEPING_FIRST = `CREATE OR REPLACE FUNCTION webhook_record_attempts(a_id text[], a_delivery text[], a_endpoint text[], a_at timestamptz[], a_duration int[],
  a_code int[], a_error text[], a_body text[], a_trigger text[], a_headers text[],
  c_id text[], c_status text[], c_next timestamptz[], c_code int[], c_at timestamptz[], c_only_pending boolean[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  kept text[];
BEGIN
  -- Each delivery's outcome (the queue follows by its triggers); a scheduled attempt changes only
  -- a delivery still pending: a disable may have cancelled it. The attempts come in the order of
  -- the changes, one each. A first attempt answered 2xx within a day is kept in its delivery.
  WITH changed AS (
    UPDATE webhook_deliveries AS d SET
      status = COALESCE(v.status, d.status),
      next_attempt_at = CASE WHEN v.status IS NULL THEN d.next_attempt_at ELSE v.next_at END,
      attempt_count = d.attempt_count + 1,
      last_status_code = v.code,
      last_attempt_at = v.at,
      updated_at = v.at,
      first_attempt_id = ${kept('v.attempt_id', 'first_attempt_id')},
      first_attempt_at = ${kept('v.at', 'first_attempt_at')},
      first_attempt_ms = ${kept('v.duration', 'first_attempt_ms')},
      first_attempt_code = ${kept('v.code', 'first_attempt_code')},
      first_attempt_body = ${kept(`decode(v.body, 'hex')`, 'first_attempt_body')},
      first_attempt_headers = ${kept('v.headers::jsonb', 'first_attempt_headers')}
    FROM (
      SELECT c.*, a.attempt_id, a.duration, a.body, a.headers,
        a.trigger = 'scheduled' AND c.code BETWEEN 200 AND 299 AND a.delivery_id = c.id AS keep
      FROM unnest(c_id, c_status, c_next, c_code, c_at, c_only_pending) WITH ORDINALITY
        AS c(id, status, next_at, code, at, only_pending, n)
      JOIN unnest(a_id, a_delivery, a_duration, a_body, a_trigger, a_headers) WITH ORDINALITY
        AS a(attempt_id, delivery_id, duration, body, trigger, headers, n) ON a.n = c.n
    ) v
    WHERE d.id = v.id AND (NOT v.only_pending OR d.status = 'pending')
    RETURNING d.first_attempt_id, v.attempt_id
  )
  SELECT array_agg(changed.attempt_id) INTO kept FROM changed WHERE changed.first_attempt_id = changed.attempt_id;
  INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error,
    response_body, trigger, request_headers)
  SELECT a.id, a.delivery_id, a.endpoint_id, a.attempted_at, a.duration_ms, a.status_code, a.error,
    decode(a.response_body, 'hex'), a.trigger, a.request_headers::jsonb
  FROM unnest(a_id, a_delivery, a_endpoint, a_at, a_duration, a_code, a_error, a_body, a_trigger, a_headers)
    AS a(id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error, response_body, trigger,
    request_headers)
  WHERE kept IS NULL OR a.id <> ALL (kept);
END $$`;

/**
 * Room for the outcome on the delivery's own page, so that its update stays HOT (no new index
 * entries): a pending delivery is about 200 bytes, one with its first attempt about 580 (the
 * headers sent are most of it). At 25% a page takes 10 new deliveries and all 10 outcomes. The
 * queue's rows (about 110 bytes) get their lease the same way at 40%.
 */
const ROOM = [
  'ALTER TABLE webhook_deliveries SET (fillfactor = 25)',
  'ALTER TABLE webhook_queue SET (fillfactor = 40)',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [COLUMNS, LOG, RECORD_KEEPING_FIRST, ...ROOM]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    // Attempts kept in their deliveries become rows again before the columns go.
    `INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error,
      response_body, trigger, request_headers)
     SELECT first_attempt_id, id, endpoint_id, first_attempt_at, first_attempt_ms, first_attempt_code, NULL,
      first_attempt_body, 'scheduled', first_attempt_headers
     FROM webhook_deliveries WHERE first_attempt_id IS NOT NULL`,
    'DROP VIEW webhook_attempt_log',
    RECORD.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'),
    'ALTER TABLE webhook_deliveries SET (fillfactor = 50)',
    'ALTER TABLE webhook_queue SET (fillfactor = 70)',
    `ALTER TABLE webhook_deliveries DROP COLUMN first_attempt_id, DROP COLUMN first_attempt_at,
      DROP COLUMN first_attempt_ms, DROP COLUMN first_attempt_code, DROP COLUMN first_attempt_body,
      DROP COLUMN first_attempt_headers`,
  ]);
  await setSearchPath(db, true);
}

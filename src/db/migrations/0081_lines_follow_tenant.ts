import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { runStatements } from './sql.ts';

/**
 * Issue 42 (Waybill on Citus), decision 0074: the line's follow-up gets its Citus twin.
 *
 * `webhook_lines_follow` (migration 0080) moves a shipment's line up when its head leaves the
 * queue; it reads and writes deliveries by endpoint and shipment alone, so that on Citus its
 * statement spans every shard and Citus refuses it ("complex joins are only supported when all
 * distributed tables are co-located and joined on their distribution columns"). Its twin
 * `webhook_lines_follow_tenant` takes the company first and names it in every table it reads or
 * writes, so that it runs in that company's shard. `webhook_record_attempts_tenant` (the record's
 * Citus twin) calls it; the one-PostgreSQL record function keeps calling `webhook_lines_follow`,
 * unchanged. A cancellation (src/delivery/lifecycle.ts) calls the twin once per company of the
 * rows it took out of lines, on every engine.
 *
 * The record's text below is migration 0080's, with the follow-up's name the only difference
 * between what `up` and `down` write; both twins still come from one text.
 */
function linesFollowFunction(perTenant: boolean): string {
  const t = (alias: string) => (perTenant ? ` AND ${alias}.tenant_id = p_tenant` : '');
  return `
CREATE OR REPLACE FUNCTION ${perTenant ? 'webhook_lines_follow_tenant(p_tenant text, ' : 'webhook_lines_follow('}p_endpoints text[], p_shipments text[]) RETURNS void
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
      WHERE x.endpoint_id = g.e AND x.line_shipment_id = g.s AND x.due_at IS NOT NULL${t('x')} ORDER BY x.line_seq LIMIT 1
    ) h
    JOIN webhook_deliveries line ON line.endpoint_id = g.e AND line.line_shipment_id = g.s AND line.due_at IS NOT NULL${t('line')}
  ) t
  WHERE f.id = t.id AND f.due_at IS DISTINCT FROM t.due${t('f')};
END $$`;
}

/**
 * Migration 0080's record function. `tenantFollow`: its Citus twin calls the follow-up's twin (0080's
 * called the one-PostgreSQL follow-up, which Citus refuses).
 */
function recordFunction(perTenant: boolean, tenantFollow: boolean): string {
  const t = (alias: string) => (perTenant ? ` AND ${alias}.tenant_id = p_tenant` : '');
  return `
CREATE OR REPLACE FUNCTION ${perTenant ? 'webhook_record_attempts_tenant(p_tenant text, ' : 'webhook_record_attempts('}a_id text[], a_delivery text[], a_tenant text[], a_endpoint text[],
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
    PERFORM ${perTenant && tenantFollow ? 'webhook_lines_follow_tenant(p_tenant, ' : 'webhook_lines_follow('}left_endpoints, left_shipments);
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

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [linesFollowFunction(true), recordFunction(true, true)]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    recordFunction(true, false),
    'DROP FUNCTION webhook_lines_follow_tenant(text, text[], text[])',
  ]);
  await setSearchPath(db, true);
}

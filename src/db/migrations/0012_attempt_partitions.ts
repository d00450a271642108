import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

const COLUMNS =
  'id, delivery_id, endpoint_id, attempted_at, duration_ms, status_code, error, response_body, trigger, request_headers';

/**
 * The attempt log in day partitions (issue 10, retention at scale; decision 0015). Thirty days of
 * attempts at thousands a second is billions of rows: retention drops whole days
 * (src/delivery/partitions.ts) instead of deleting rows one by one. A DEFAULT partition
 * takes any row no day partition covers yet, so an insert never fails for want of a partition.
 *
 * The partition key must be part of the primary key, and a foreign key from a partitioned table
 * would lock a parent row for every attempt written: the link to the endpoint is kept by a
 * trigger that removes an endpoint's attempts with it, and the link to the delivery by the
 * engine (a delivery's attempts are written with it, and a day's attempts outlive no delivery by
 * more than that day).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE webhook_attempts RENAME TO webhook_attempts_unpartitioned',
    'ALTER TABLE webhook_attempts_unpartitioned RENAME CONSTRAINT webhook_attempts_pkey TO webhook_attempts_unpartitioned_pkey',
    'DROP INDEX webhook_attempts_delivery',
    'DROP INDEX webhook_attempts_endpoint',
    'DROP INDEX webhook_attempts_time',
    `CREATE TABLE webhook_attempts (
      id text NOT NULL,
      delivery_id text NOT NULL,
      endpoint_id text NOT NULL,
      attempted_at timestamptz NOT NULL,
      duration_ms integer NOT NULL,
      status_code integer,
      error text,
      response_body bytea,
      trigger text NOT NULL,
      request_headers jsonb NOT NULL,
      PRIMARY KEY (id, attempted_at)
    ) PARTITION BY RANGE (attempted_at)`,
    'CREATE TABLE webhook_attempts_default PARTITION OF webhook_attempts DEFAULT',
    `INSERT INTO webhook_attempts (${COLUMNS}) SELECT ${COLUMNS} FROM webhook_attempts_unpartitioned`,
    'DROP TABLE webhook_attempts_unpartitioned',
    'CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at)',
    'CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at)',
    `CREATE FUNCTION webhook_attempts_of_endpoint_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM webhook_attempts WHERE endpoint_id = OLD.id;
        RETURN OLD;
      END $$`,
    `CREATE TRIGGER webhook_attempts_of_endpoint_deleted AFTER DELETE ON webhook_endpoints
      FOR EACH ROW EXECUTE FUNCTION webhook_attempts_of_endpoint_deleted()`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TRIGGER webhook_attempts_of_endpoint_deleted ON webhook_endpoints',
    'DROP FUNCTION webhook_attempts_of_endpoint_deleted()',
    'ALTER TABLE webhook_attempts RENAME TO webhook_attempts_partitioned',
    'ALTER TABLE webhook_attempts_partitioned RENAME CONSTRAINT webhook_attempts_pkey TO webhook_attempts_partitioned_pkey',
    'DROP INDEX webhook_attempts_delivery',
    'DROP INDEX webhook_attempts_endpoint',
    `CREATE TABLE webhook_attempts (
      id text PRIMARY KEY,
      delivery_id text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
      endpoint_id text NOT NULL,
      attempted_at timestamptz NOT NULL,
      duration_ms integer NOT NULL,
      status_code integer,
      error text,
      response_body bytea,
      trigger text NOT NULL,
      request_headers jsonb NOT NULL
    )`,
    `INSERT INTO webhook_attempts (${COLUMNS})
      SELECT ${COLUMNS} FROM webhook_attempts_partitioned a
      WHERE EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = a.delivery_id)`,
    'DROP TABLE webhook_attempts_partitioned',
    'CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at)',
    'CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at)',
    'CREATE INDEX webhook_attempts_time ON webhook_attempts USING brin (attempted_at)',
  ]);
}

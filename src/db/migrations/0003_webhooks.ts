import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
      customer_account_id text REFERENCES customer_accounts(id) ON DELETE CASCADE,
      installation_id text,
      livemode boolean NOT NULL,
      url text NOT NULL,
      description text,
      event_types jsonb NOT NULL,
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      secret_sealed text NOT NULL,
      previous_secret_sealed text,
      previous_secret_expires_at timestamptz,
      failing_since timestamptz,
      created_by text REFERENCES users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    'CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, livemode, created_at DESC, id DESC)',
    'CREATE INDEX webhook_endpoints_installation ON webhook_endpoints (installation_id)',
    `CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      endpoint_id text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      event_id text NOT NULL,
      event_type text NOT NULL,
      payload text NOT NULL,
      status text NOT NULL,
      attempt_count integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      last_status_code integer,
      last_attempt_at timestamptz,
      locked_by text,
      locked_until timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    // The worker's claim: due pending deliveries, oldest first.
    `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
    'CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC, id DESC)',
    'CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at)',
    `CREATE TABLE webhook_attempts (
      id text PRIMARY KEY,
      delivery_id text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
      endpoint_id text NOT NULL,
      attempted_at timestamptz NOT NULL,
      duration_ms integer NOT NULL,
      status_code integer,
      error text,
      response_body text,
      trigger text NOT NULL,
      request_headers jsonb NOT NULL
    )`,
    'CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at)',
    'CREATE INDEX webhook_attempts_time ON webhook_attempts (attempted_at)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TABLE webhook_attempts',
    'DROP TABLE webhook_deliveries',
    'DROP TABLE webhook_endpoints',
  ]);
}

import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * One delivery engine for every kind of target (issue 8): a webhook endpoint, or an app's events
 * URL. The app's target is a row of webhook_endpoints with kind 'app_events', so claims, fairness,
 * leases, the log and replays are the same code; its URL and secrets stay on the app (one place to
 * change them) and the delivery_targets view gives the engine whichever applies.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    // Answers are kept as the bytes received: NUL and invalid UTF-8 fit (issue 7, item 1).
    "ALTER TABLE webhook_attempts ALTER COLUMN response_body TYPE bytea USING convert_to(response_body, 'UTF8')",
    "ALTER TABLE webhook_endpoints ADD COLUMN kind text NOT NULL DEFAULT 'endpoint'",
    'ALTER TABLE webhook_endpoints ADD COLUMN app_id text REFERENCES apps(id) ON DELETE CASCADE',
    // Suspension holds what waits for the app's targets; reinstating lets it go.
    'ALTER TABLE webhook_endpoints ADD COLUMN held boolean NOT NULL DEFAULT false',
    'ALTER TABLE webhook_endpoints ALTER COLUMN tenant_id DROP NOT NULL',
    'ALTER TABLE webhook_endpoints ALTER COLUMN url DROP NOT NULL',
    'ALTER TABLE webhook_endpoints ALTER COLUMN secret_sealed DROP NOT NULL',
    "CREATE UNIQUE INDEX webhook_endpoints_app_events ON webhook_endpoints (app_id) WHERE kind = 'app_events'",
    `UPDATE webhook_endpoints SET held = true WHERE installation_id IN (
      SELECT i.id FROM installations i JOIN apps a ON a.id = i.app_id WHERE a.status = 'suspended')`,
    `CREATE VIEW delivery_targets AS
      SELECT e.id, e.kind, e.app_id, e.enabled, e.held, e.failing_since,
        COALESCE(a.events_url, e.url) AS url,
        COALESCE(a.events_secret_sealed, e.secret_sealed) AS secret_sealed,
        CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_sealed ELSE e.previous_secret_sealed END
          AS previous_secret_sealed,
        CASE WHEN e.kind = 'app_events' THEN a.events_previous_secret_expires_at
          ELSE e.previous_secret_expires_at END AS previous_secret_expires_at
      FROM webhook_endpoints e
      LEFT JOIN apps a ON e.kind = 'app_events' AND a.id = e.app_id`,
    `CREATE TABLE privacy_requests (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
      kind text NOT NULL,
      recipient_email text,
      recipient_phone text,
      status text NOT NULL,
      shipment_count integer NOT NULL,
      requested_by text REFERENCES users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL,
      completed_at timestamptz
    )`,
    'CREATE INDEX privacy_requests_tenant ON privacy_requests (tenant_id, created_at DESC, id DESC)',
    `CREATE TABLE privacy_request_messages (
      privacy_request_id text NOT NULL REFERENCES privacy_requests(id) ON DELETE CASCADE,
      delivery_id text NOT NULL,
      app_id text NOT NULL,
      installation_id text NOT NULL,
      shipment_count integer NOT NULL,
      PRIMARY KEY (privacy_request_id, delivery_id)
    )`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TABLE privacy_request_messages',
    'DROP TABLE privacy_requests',
    'DROP VIEW delivery_targets',
    'DROP INDEX webhook_endpoints_app_events',
    "DELETE FROM webhook_endpoints WHERE kind <> 'endpoint'",
    'ALTER TABLE webhook_endpoints DROP COLUMN held',
    'ALTER TABLE webhook_endpoints DROP COLUMN app_id',
    'ALTER TABLE webhook_endpoints DROP COLUMN kind',
    "ALTER TABLE webhook_attempts ALTER COLUMN response_body TYPE text USING convert_from(response_body, 'UTF8')",
  ]);
}

import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Recipients (issue 52): the public tracking page, branding, recipient notifications.
 *
 * - `tracking_tokens`: one opaque random token per shipment (at least 128 random bits, derived
 *   from nothing), the `{web_url}/t/{token}` of its `tracking_url`. Its own table, so that a
 *   rotation replaces it and the old one finds nothing. Existing shipments get theirs here: 244
 *   random bits of two `gen_random_uuid()` (PostgreSQL's strong random source), in hex.
 * - `recipient_settings`: a company's branding and which milestones mail the recipient.
 * - `company_logos`: the re-encoded logo, served on the page.
 * - `recipient_notifications`: the queue and the log of recipient e-mails, one row per
 *   milestone of a shipment at most (the unique key), claimed with a lease and retried.
 * - `recipient_unsubscribes`: addresses (keyed hashes) that asked for no more e-mail.
 *
 * Every table is a company's, distributed by tenant_id on Citus (src/db/distribution.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE tracking_tokens (
      tenant_id text NOT NULL,
      token text NOT NULL,
      shipment_id text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (tenant_id, token),
      UNIQUE (tenant_id, shipment_id)
    )`,
    // The page finds a token without its company: on Citus a look-up in every shard.
    'CREATE INDEX tracking_tokens_token ON tracking_tokens (token)',
    `INSERT INTO tracking_tokens (tenant_id, token, shipment_id, created_at)
      SELECT tenant_id,
        replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
        id, created_at
      FROM shipments`,
    `CREATE TABLE recipient_settings (
      tenant_id text PRIMARY KEY,
      display_name text,
      accent_color text,
      support_url text,
      logo_name text,
      notifications_enabled boolean NOT NULL DEFAULT false,
      notification_events jsonb NOT NULL DEFAULT '[]',
      updated_at timestamptz NOT NULL
    )`,
    `CREATE TABLE company_logos (
      tenant_id text NOT NULL,
      name text NOT NULL,
      content_type text NOT NULL,
      content bytea NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (tenant_id, name)
    )`,
    `CREATE TABLE recipient_notifications (
      id text NOT NULL,
      tenant_id text NOT NULL,
      shipment_id text NOT NULL,
      livemode boolean NOT NULL,
      event text NOT NULL,
      to_address text,
      to_masked text NOT NULL,
      address_hash text NOT NULL,
      language text NOT NULL,
      status text NOT NULL CHECK (status IN ('queued', 'sent', 'failed', 'suppressed')),
      reason text,
      attempts int NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      locked_until timestamptz,
      unsubscribe_token text NOT NULL,
      created_at timestamptz NOT NULL,
      sent_at timestamptz,
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, shipment_id, event)
    )`,
    `CREATE INDEX recipient_notifications_due ON recipient_notifications (next_attempt_at)
      WHERE status = 'queued'`,
    'CREATE INDEX recipient_notifications_unsubscribe ON recipient_notifications (unsubscribe_token)',
    `CREATE TABLE recipient_unsubscribes (
      tenant_id text NOT NULL,
      address_hash text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (tenant_id, address_hash)
    )`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TABLE recipient_unsubscribes',
    'DROP TABLE recipient_notifications',
    'DROP TABLE company_logos',
    'DROP TABLE recipient_settings',
    'DROP TABLE tracking_tokens',
  ]);
}

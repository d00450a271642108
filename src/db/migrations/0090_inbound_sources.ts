import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 51, item 3 (decision 0090): inbound sources and their log.
 *
 * - `inbound_sources`: a carrier or partner that POSTs Standard Webhooks-signed checkpoints to
 *   `{base_url}/inbound/{id}`; a company table (distributed by tenant_id on Citus), of one mode and
 *   maybe one merchant account. Its signing secret is sealed as webhook endpoints' are, with the
 *   previous one and when it stops verifying (24 h after a rotation).
 * - `inbound_messages`: every message received, with its outcome and the result of each
 *   checkpoint; never its body. A `webhook-id` is taken once per source: the partial unique index
 *   leaves out rejected messages (a forged message must not take the id of a real one) and the
 *   duplicates' own log rows.
 */
const UP = [
  `CREATE TABLE inbound_sources (
    id text NOT NULL,
    tenant_id text NOT NULL,
    customer_account_id text,
    livemode boolean NOT NULL,
    name text NOT NULL,
    carrier_code text NOT NULL,
    secret_sealed text NOT NULL,
    previous_secret_sealed text,
    previous_secret_expires_at timestamptz,
    created_by text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (customer_account_id, tenant_id) REFERENCES customer_accounts (id, tenant_id) ON DELETE CASCADE
  )`,
  'CREATE INDEX inbound_sources_list ON inbound_sources (tenant_id, livemode, created_at DESC, id DESC)',
  `CREATE TABLE inbound_messages (
    id text NOT NULL,
    tenant_id text NOT NULL,
    source_id text NOT NULL,
    webhook_id text,
    status text NOT NULL CHECK (status IN ('applied', 'duplicate', 'partly_applied', 'rejected')),
    reason text,
    results jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (source_id, tenant_id) REFERENCES inbound_sources (id, tenant_id) ON DELETE CASCADE
  )`,
  `CREATE UNIQUE INDEX inbound_messages_webhook_id ON inbound_messages (source_id, webhook_id, tenant_id)
    WHERE status IN ('applied', 'partly_applied')`,
  'CREATE INDEX inbound_messages_log ON inbound_messages (tenant_id, source_id, created_at DESC, id DESC)',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, UP);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP TABLE inbound_messages', 'DROP TABLE inbound_sources']);
}

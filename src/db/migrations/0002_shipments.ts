import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE shipments (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
      customer_account_id text REFERENCES customer_accounts(id) ON DELETE SET NULL,
      livemode boolean NOT NULL,
      tracking_number text NOT NULL UNIQUE,
      status text NOT NULL,
      external_ref text,
      recipient_name text NOT NULL,
      recipient_email text,
      recipient_phone text,
      payment_mode text NOT NULL,
      cod_amount_minor bigint,
      currency text NOT NULL,
      parcels jsonb NOT NULL,
      exception_reason text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    'CREATE INDEX shipments_list ON shipments (tenant_id, livemode, created_at DESC, id DESC)',
    'CREATE INDEX shipments_account ON shipments (customer_account_id, livemode, created_at DESC, id DESC)',
    // Every shipment change writes its events here in the same transaction; the envelope is
    // kept as the exact text that will be signed and sent.
    `CREATE TABLE events (
      id text PRIMARY KEY,
      tenant_id text NOT NULL,
      livemode boolean NOT NULL,
      type text NOT NULL,
      shipment_id text,
      customer_account_id text,
      payload text NOT NULL,
      created_at timestamptz NOT NULL
    )`,
    'CREATE INDEX events_tenant ON events (tenant_id, livemode, created_at DESC, id DESC)',
    'CREATE INDEX events_shipment ON events (shipment_id, created_at)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP TABLE events', 'DROP TABLE shipments']);
}

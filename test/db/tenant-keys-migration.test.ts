import { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { SerializedPGliteDialect } from '../../src/db/drivers.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import { engine } from '../support/harness.ts';

/** The company tables, distributed by tenant on Citus (decision 0071); the webhook_* ones are 0080's. */
const DISTRIBUTED = [
  'customer_accounts',
  'shipments',
  'events',
  'installations',
  'installation_records',
  'privacy_requests',
  'privacy_request_messages',
  'audit_events',
  'app_reviews',
];

async function catalog(db: Kysely<unknown>) {
  const { rows: constraints } = await sql<{
    tbl: string;
    name: string;
    type: string;
    columns: string[];
    target: string | null;
    target_columns: string[] | null;
  }>`SELECT c.conrelid::regclass::text AS tbl, c.conname AS name, c.contype AS type,
      ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o) AS columns,
      CASE WHEN c.contype = 'f' THEN c.confrelid::regclass::text END AS target,
      CASE WHEN c.contype = 'f' THEN ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, o)
        JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o) END AS target_columns
    FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
    WHERE t.relnamespace = current_schema()::regnamespace AND c.contype IN ('p', 'u', 'f')`.execute(db);
  const { rows: uniqueIndexes } = await sql<{ tbl: string; name: string; columns: string[] }>`
    SELECT t.relname::text AS tbl, ic.relname::text AS name,
      ARRAY(SELECT a.attname::text FROM unnest(i.indkey) k(n)
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n) AS columns
    FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
    WHERE t.relnamespace = current_schema()::regnamespace AND i.indisunique`.execute(db);
  const { rows: triggers } = await sql<{ tbl: string; name: string }>`
    SELECT tgrelid::regclass::text AS tbl, tgname AS name FROM pg_trigger WHERE NOT tgisinternal`.execute(db);
  const { rows: tenantColumns } = await sql<{ tbl: string; not_null: boolean }>`
    SELECT table_name::text AS tbl, is_nullable = 'NO' AS not_null FROM information_schema.columns
    WHERE table_schema = current_schema() AND column_name = 'tenant_id'`.execute(db);
  return { constraints, uniqueIndexes, triggers, tenantColumns };
}

// The migration's SQL is the same on both engines; a fresh embedded database is enough to run it.
describe.skipIf(engine !== 'pglite')('migration 0079: tenant keys', () => {
  it('keeps every row, gives tokens, codes and privacy messages their tenant, and keys the company tables by it', async () => {
    const pglite = await PGlite.create();
    const db = new Kysely<unknown>({ dialect: new SerializedPGliteDialect({ pglite }) });
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
    // Up to 0079 and back: 0080, after it, is one-way (decision 0074).
    expect((await migrator.migrateTo('0078_subscription_destinations')).error).toBeUndefined();
    await sql`INSERT INTO users (id, email, name, password_hash, created_at, updated_at)
      VALUES ('usr_1', 'd@example.test', 'Dev', 'x', now(), now())`.execute(db);
    await sql`INSERT INTO companies (id, name, created_at, updated_at)
      VALUES ('c1', 'One', now(), now()), ('c2', 'Two', now(), now())`.execute(db);
    await sql`INSERT INTO customer_accounts (id, tenant_id, name, created_at)
      VALUES ('ca_1', 'c1', 'North', now()), ('ca_2', 'c2', 'South', now())`.execute(db);
    await sql`INSERT INTO memberships (id, tenant_id, user_id, role, customer_account_id, created_at)
      VALUES ('mem_1', 'c1', 'usr_1', 'owner', NULL, now()), ('mem_2', 'c2', 'usr_1', 'merchant_admin', 'ca_2', now())`.execute(
      db,
    );
    await sql`INSERT INTO api_tokens (id, tenant_id, name, token_hash, token_hint, mode, scopes, customer_account_id,
        created_at)
      VALUES ('tok_1', 'c2', 'Key', 'h1', 'x', 'live', '[]', 'ca_2', now())`.execute(db);
    await sql`INSERT INTO apps (id, developer_id, name, description, redirect_uris, scopes, kind,
        events_secret_sealed, status, created_at, updated_at)
      VALUES ('app_store', 'usr_1', 'Store App', 'd', '[]', '[]', 'public', 's', 'published', now(), now())`.execute(
      db,
    );
    await sql`INSERT INTO installations (id, app_id, tenant_id, customer_account_id, user_id, scopes, approved_at,
        livemode, resource, created_at, updated_at)
      VALUES ('inst_1', 'app_store', 'c1', NULL, 'usr_1', '[]', now(), true, 'v1', now(), now()),
        ('inst_2', 'app_store', 'c2', 'ca_2', 'usr_1', '[]', now(), true, 'v1', now(), now())`.execute(db);
    await sql`INSERT INTO oauth_tokens (id, token_hash, kind, app_id, installation_id, user_id, scopes, resource,
        created_at, expires_at)
      SELECT 'grt_' || i.id, 'hash_' || i.id, 'access', i.app_id, i.id, 'usr_1', '[]', 'v1', now(),
        now() + interval '1 hour'
      FROM installations i`.execute(db);
    await sql`INSERT INTO oauth_codes (code_hash, app_id, installation_id, user_id, redirect_uri, code_challenge,
        scopes, resource, created_at, expires_at)
      VALUES ('code_2', 'app_store', 'inst_2', 'usr_1', 'https://x.example/cb', 'c', '[]', 'v1', now(),
        now() + interval '1 minute')`.execute(db);
    await sql`INSERT INTO shipments (id, tenant_id, customer_account_id, livemode, tracking_number, status,
        recipient_name, payment_mode, currency, parcels, created_at, updated_at)
      VALUES ('shp_1', 'c2', 'ca_2', true, 'WB1', 'confirmed', 'Ada', 'prepaid', 'EUR', '[]', now(), now())`.execute(
      db,
    );
    await sql`INSERT INTO events (id, tenant_id, livemode, type, shipment_id, customer_account_id, payload, created_at)
      VALUES ('evt_1', 'c2', true, 'shipment.created', 'shp_1', 'ca_2', '{}', now())`.execute(db);
    await sql`INSERT INTO privacy_requests (id, tenant_id, kind, recipient_email, status, shipment_count, created_at)
      VALUES ('prq_1', 'c2', 'erasure', 'a@example.test', 'messages_queued', 1, now())`.execute(db);
    await sql`INSERT INTO privacy_request_messages (privacy_request_id, delivery_id, app_id, installation_id,
        shipment_count)
      VALUES ('prq_1', 'dlv_1', 'app_store', 'inst_2', 1)`.execute(db);
    await sql`INSERT INTO audit_events (id, tenant_id, actor, action, details, created_at)
      VALUES ('aud_1', 'c1', 'usr_1', 'oauth.installation_approved', '{}', now()),
        ('aud_2', NULL, 'usr_1', 'app.suspended', '{}', now())`.execute(db);
    await sql`INSERT INTO app_reviews (id, app_id, tenant_id, author_id, rating, body, created_at, updated_at)
      VALUES ('rev_1', 'app_store', 'c1', 'usr_1', 5, 'Good', now(), now())`.execute(db);

    expect((await migrator.migrateTo('0079_tenant_keys')).error).toBeUndefined();

    const { rows: tokens } = await sql<{ id: string; tenant_id: string }>`
      SELECT id, tenant_id FROM oauth_tokens ORDER BY id`.execute(db);
    expect(tokens).toEqual([
      { id: 'grt_inst_1', tenant_id: 'c1' },
      { id: 'grt_inst_2', tenant_id: 'c2' },
    ]);
    const { rows: codes } = await sql<{ tenant_id: string }>`SELECT tenant_id FROM oauth_codes`.execute(db);
    expect(codes).toEqual([{ tenant_id: 'c2' }]);
    const { rows: messages } = await sql<{ tenant_id: string }>`
      SELECT tenant_id FROM privacy_request_messages`.execute(db);
    expect(messages).toEqual([{ tenant_id: 'c2' }]);
    const { rows: audit } = await sql<{ id: string; tenant_id: string }>`
      SELECT id, tenant_id FROM audit_events ORDER BY id`.execute(db);
    expect(audit).toEqual([
      { id: 'aud_1', tenant_id: 'c1' },
      { id: 'aud_2', tenant_id: 'platform' },
    ]);
    for (const [table, count] of [
      ['customer_accounts', 2],
      ['memberships', 2],
      ['api_tokens', 1],
      ['installations', 2],
      ['shipments', 1],
      ['events', 1],
      ['privacy_requests', 1],
      ['app_reviews', 1],
    ] as const) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(
        db,
      );
      expect(rows[0]?.n, table).toBe(count);
    }

    const { constraints, uniqueIndexes, triggers, tenantColumns } = await catalog(db);
    for (const table of DISTRIBUTED) {
      expect(tenantColumns.find((c) => c.tbl === table)?.not_null, table).toBe(true);
      const primary = constraints.find((c) => c.tbl === table && c.type === 'p');
      // Last, so that `WHERE id = $1` stays a probe of the key's index.
      expect(primary?.columns.at(-1), table).toBe('tenant_id');
      for (const index of uniqueIndexes.filter((i) => i.tbl === table)) {
        expect(index.columns, index.name).toContain('tenant_id');
      }
      expect(
        triggers.filter((t) => t.tbl === table),
        table,
      ).toEqual([]);
    }
    for (const fk of constraints.filter(
      (c) => c.type === 'f' && c.target && DISTRIBUTED.includes(c.target),
    )) {
      if (fk.tbl.startsWith('webhook_')) continue;
      // Into a company table only from a company table, and with the tenant on both sides.
      expect(DISTRIBUTED, fk.name).toContain(fk.tbl);
      expect(fk.columns.at(-1), fk.name).toBe('tenant_id');
      expect(fk.target_columns?.at(-1), fk.name).toBe('tenant_id');
    }
    // The delivery tables' keys into installations and customer accounts come back with 0080.
    expect(constraints.map((c) => c.name)).not.toContain('webhook_endpoints_installation_fk');
    const { rows: functions } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'store_count_installations'`.execute(db);
    expect(functions[0]?.n).toBe(0);

    // One tracking number per company, still.
    await expect(
      sql`INSERT INTO shipments (id, tenant_id, livemode, tracking_number, status, recipient_name, payment_mode,
          currency, parcels, created_at, updated_at)
        VALUES ('shp_2', 'c2', true, 'WB1', 'confirmed', 'Bo', 'prepaid', 'EUR', '[]', now(), now())`.execute(
        db,
      ),
    ).rejects.toThrow();
    // A company table row pointing into another company's account is refused.
    await expect(
      sql`INSERT INTO shipments (id, tenant_id, customer_account_id, livemode, tracking_number, status,
          recipient_name, payment_mode, currency, parcels, created_at, updated_at)
        VALUES ('shp_3', 'c1', 'ca_2', true, 'WB3', 'confirmed', 'Bo', 'prepaid', 'EUR', '[]', now(), now())`.execute(
        db,
      ),
    ).rejects.toThrow();
    // An account with shipments is not removed (no SET NULL on Citus); its shipments let go first,
    // then its installations go with it.
    await expect(sql`DELETE FROM customer_accounts WHERE id = 'ca_2'`.execute(db)).rejects.toThrow();
    await sql`UPDATE shipments SET customer_account_id = NULL WHERE customer_account_id = 'ca_2'`.execute(db);
    await sql`DELETE FROM customer_accounts WHERE id = 'ca_2'`.execute(db);
    const { rows: shipments } = await sql<{ tenant_id: string; customer_account_id: string | null }>`
      SELECT tenant_id, customer_account_id FROM shipments`.execute(db);
    expect(shipments).toEqual([{ tenant_id: 'c2', customer_account_id: null }]);
    const { rows: left } = await sql<{ id: string }>`SELECT id FROM installations`.execute(db);
    expect(left).toEqual([{ id: 'inst_1' }]);

    expect((await migrator.migrateTo('0078_subscription_destinations')).error).toBeUndefined();
    const { rows: restored } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_trigger WHERE tgname = 'installations_store_count'`.execute(db);
    expect(restored[0]?.n).toBe(1);
    expect((await migrator.migrateTo('0079_tenant_keys')).error).toBeUndefined();
    // And 0080 on these rows: the delivery tables keyed by the same tenants.
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    await db.destroy();
    // Every migration from an empty database, and back and forth: slower than one test's default.
  }, 180_000);
});

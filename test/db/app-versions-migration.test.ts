import { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { SerializedPGliteDialect } from '../../src/db/drivers.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import { engine } from '../support/harness.ts';

/** Migration 0060 makes version 1 of every app that exists, from its fields. */
// The migration's SQL is the same on both engines; a fresh embedded database is enough to run it.
describe.skipIf(engine !== 'pglite')('migration 0060: app versions', () => {
  it('gives every existing app an active version 1 made from its current fields', async () => {
    const pglite = await PGlite.create();
    const db = new Kysely<unknown>({ dialect: new SerializedPGliteDialect({ pglite }) });
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
    const before = await migrator.migrateTo('0041_ordering_per_shipment');
    expect(before.error).toBeUndefined();
    await sql`INSERT INTO users (id, email, name, password_hash, created_at, updated_at)
      VALUES ('usr_1', 'd@example.test', 'Dev', 'x', now(), now())`.execute(db);
    await sql`INSERT INTO apps (id, developer_id, name, description, homepage_url, privacy_url, support_url,
        redirect_uris, scopes, kind, client_secret_hash, events_url, events_secret_sealed, status, created_at, updated_at)
      VALUES ('app_1', 'usr_1', 'Old App', 'From before versions', NULL, 'https://old.example/privacy', NULL,
        '["https://old.example/cb"]', '["shipments:read"]', 'public', NULL, 'https://old.example/events', 'sealed',
        'published', now(), now())`.execute(db);
    const after = await migrator.migrateToLatest();
    expect(after.error).toBeUndefined();
    const { rows } = await sql<{ number: number; status: string; manifest: unknown; id: string }>`
      SELECT id, number, status, manifest FROM app_versions WHERE app_id = 'app_1'`.execute(db);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.id).toMatch(/^apv_[0-9A-Za-z]{10,}$/);
    expect(rows[0]).toMatchObject({ number: 1, status: 'active' });
    expect(rows[0]?.manifest).toEqual({
      name: 'Old App',
      description: 'From before versions',
      homepage_url: null,
      privacy_url: 'https://old.example/privacy',
      support_url: null,
      redirect_uris: ['https://old.example/cb'],
      scopes: ['shipments:read'],
      optional_scopes: [],
      events_url: 'https://old.example/events',
      subscriptions: [],
    });
    await db.destroy();
    // Every migration from an empty database: slower than one test's default on a busy machine.
  }, 180_000);
});

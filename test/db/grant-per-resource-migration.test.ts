import { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { SerializedPGliteDialect } from '../../src/db/drivers.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import { engine } from '../support/harness.ts';

/** Migration 0067 splits what one installation row held for both resources (decision 0063). */
// The migration's SQL is the same on both engines; a fresh embedded database is enough to run it.
describe.skipIf(engine !== 'pglite')('migration 0067: one grant per resource', () => {
  it("makes agent clients' and test-mode rows /mcp grants and ends what a row held for the other resource", async () => {
    const pglite = await PGlite.create();
    const db = new Kysely<unknown>({ dialect: new SerializedPGliteDialect({ pglite }) });
    const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo('0066_claim_cost_per_row')).error).toBeUndefined();
    await sql`INSERT INTO users (id, email, name, password_hash, created_at, updated_at)
      VALUES ('usr_1', 'd@example.test', 'Dev', 'x', now(), now())`.execute(db);
    await sql`INSERT INTO companies (id, name, created_at, updated_at)
      VALUES ('c1', 'One', now(), now()), ('c2', 'Two', now(), now())`.execute(db);
    await sql`INSERT INTO apps (id, developer_id, name, description, redirect_uris, scopes, kind,
        events_secret_sealed, status, created_at, updated_at)
      VALUES ('app_store', 'usr_1', 'Store App', 'd', '[]', '[]', 'public', 's', 'published', now(), now()),
        ('app_agent', NULL, 'Agent', 'd', '[]', '[]', 'public', 's', 'private', now(), now())`.execute(db);
    // A live app installation; one an /mcp approval flipped to test; an agent's live /v1 grant.
    await sql`INSERT INTO installations (id, app_id, tenant_id, user_id, scopes, approved_at, livemode,
        created_at, updated_at)
      VALUES ('inst_live', 'app_store', 'c1', 'usr_1', '[]', now(), true, now(), now()),
        ('inst_flipped', 'app_store', 'c2', 'usr_1', '[]', now(), false, now(), now()),
        ('agc_agent', 'app_agent', 'c1', 'usr_1', '[]', now(), true, now(), now())`.execute(db);
    await sql`INSERT INTO oauth_tokens (id, token_hash, kind, app_id, installation_id, user_id, scopes, resource,
        created_at, expires_at)
      SELECT i.id || '_' || r, i.id || r, 'access', i.app_id, i.id, 'usr_1', '[]', r, now(), now() + interval '1 hour'
      FROM installations i CROSS JOIN (VALUES ('v1'), ('mcp')) AS v(r)`.execute(db);
    await sql`INSERT INTO app_store_stats (app_id, install_count) VALUES ('app_store', 2)
      ON CONFLICT (app_id) DO UPDATE SET install_count = 2`.execute(db);

    expect((await migrator.migrateTo('0078_subscription_destinations')).error).toBeUndefined();
    const { rows: grants } = await sql<{ id: string; resource: string }>`
      SELECT id, resource FROM installations ORDER BY id`.execute(db);
    expect(grants).toEqual([
      { id: 'agc_agent', resource: 'mcp' },
      { id: 'inst_flipped', resource: 'mcp' },
      { id: 'inst_live', resource: 'v1' },
    ]);
    const { rows: standing } = await sql<{ id: string }>`
      SELECT id FROM oauth_tokens WHERE revoked_at IS NULL ORDER BY id`.execute(db);
    expect(standing.map((t) => t.id)).toEqual(['agc_agent_mcp', 'inst_flipped_mcp', 'inst_live_v1']);
    const { rows: stats } = await sql<{ install_count: number }>`
      SELECT install_count FROM app_store_stats WHERE app_id = 'app_store'`.execute(db);
    expect(stats[0]?.install_count).toBe(1);
    // The store app's /mcp grant on company 1 is a row of its own now.
    await sql`INSERT INTO installations (id, app_id, tenant_id, user_id, scopes, approved_at, livemode, resource,
        created_at, updated_at)
      VALUES ('agc_store', 'app_store', 'c1', 'usr_1', '[]', now(), false, 'mcp', now(), now())`.execute(db);
    await expect(
      sql`INSERT INTO installations (id, app_id, tenant_id, user_id, scopes, approved_at, created_at, updated_at)
        VALUES ('inst_twice', 'app_store', 'c1', 'usr_1', '[]', now(), now(), now())`.execute(db),
    ).rejects.toThrow();
    expect((await migrator.migrateTo('0066_claim_cost_per_row')).error).toBeUndefined();
    await db.destroy();
    // Every migration from an empty database, twice over and back: slower than one test's default.
  }, 180_000);
});

import { sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import type { Db } from './database.ts';
import { migrations } from './migrations/index.ts';

const provider: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  },
};

/** Applies every migration not yet applied; the same files serve PostgreSQL and PGlite. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema unless told which one: name ours, or a
  // kysely_migration table of another schema (other test runs on the same server) hides our missing one.
  const { rows } = await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(db);
  const migrator = new Migrator({ db, provider, migrationTableSchema: rows[0]?.schema ?? 'public' });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

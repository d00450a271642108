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
  // Kysely finds its bookkeeping tables in any schema unless told which: with one schema per test
  // file, another file's lock table would be taken for ours, and migrating fails half the time.
  const current = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const migrator = new Migrator({ db, provider, migrationTableSchema: current.rows[0]?.schema });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

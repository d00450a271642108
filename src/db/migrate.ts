import { sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import type { Db } from './database.ts';
import { migrations } from './migrations/index.ts';

const provider: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  },
};

/** PostgreSQL's undefined_table and undefined_column. */
const UNDEFINED_TABLE = '42P01';
const UNDEFINED_COLUMN = '42703';
const ATTEMPTS = 5;

/**
 * Applies every migration not yet applied; the same files serve PostgreSQL and PGlite. Kysely
 * first reads every table's columns from the catalog, and a table or column dropped meanwhile
 * (retention drops a day of the attempt log, a migration goes down, in any schema of the database)
 * fails that read: it is tried again.
 */
export async function migrateToLatest(db: Db): Promise<string[]> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await migrateOnce(db);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if ((code !== UNDEFINED_TABLE && code !== UNDEFINED_COLUMN) || attempt >= ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

async function migrateOnce(db: Db): Promise<string[]> {
  // Kysely finds its bookkeeping tables in any schema unless told which: with one schema per test
  // file, another file's lock table would be taken for ours, and migrating fails half the time.
  const current = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const schema = current.rows[0]?.schema;
  if (schema && (await allApplied(db, schema))) return [];
  const migrator = new Migrator({ db, provider, migrationTableSchema: schema });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Whether the schema has exactly the migrations this version knows, read in one statement: what a
 * start finds nearly always. The migrator would first read the columns of every table in the
 * database (hundreds of milliseconds where many schemas share it) and take its lock; anything else
 * (a new database, a migration to apply, one this version does not know) is left to it, as before.
 * Without the lock a migration being applied is not seen until it commits: the migrator then waits
 * for it.
 */
async function allApplied(db: Db, schema: string): Promise<boolean> {
  const table = sql.id(schema, 'kysely_migration');
  let names: string[];
  try {
    const { rows } = await sql<{ name: string }>`SELECT name FROM ${table}`.execute(db);
    names = rows.map((row) => row.name);
  } catch (err) {
    if ((err as { code?: unknown }).code === UNDEFINED_TABLE) return false;
    throw err;
  }
  const applied = new Set(names);
  const known = Object.keys(migrations);
  return applied.size === known.length && known.every((name) => applied.has(name));
}

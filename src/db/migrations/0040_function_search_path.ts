import { type Kysely, sql } from 'kysely';

/**
 * Every function of Waybill's schema runs with a fixed search_path: its own schema, then pg_temp
 * last (pg_catalog is always searched first), so that nobody who can create objects in another
 * schema or a temporary one can put a table or function of the same name in a function's way.
 * A later migration that makes or replaces functions calls `setSearchPath` at its end (a
 * `CREATE OR REPLACE FUNCTION` drops the setting; a test reads every function's settings).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await setSearchPath(db, false);
}

export async function setSearchPath(db: Kysely<unknown>, fixed: boolean): Promise<void> {
  const { rows } = await sql<{ signature: string; schema: string }>`
    SELECT p.oid::regprocedure::text AS signature, n.nspname AS schema
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = current_schema() AND p.prokind = 'f'`.execute(db);
  for (const { signature, schema } of rows) {
    const setting = fixed ? sql`SET search_path = ${sql.id(schema)}, pg_temp` : sql`RESET search_path`;
    await sql`ALTER FUNCTION ${sql.raw(signature)} ${setting}`.execute(db);
  }
}

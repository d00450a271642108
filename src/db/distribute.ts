import { sql } from 'kysely';
import type { Db } from './database.ts';
import {
  DELEGATED_FUNCTIONS,
  DELEGATED_WITH,
  DISTRIBUTED_TABLES,
  DISTRIBUTION_COLUMN,
  type Placement,
  placementOf,
  REFERENCE_TABLES,
} from './distribution.ts';

/** What the distribution step did to one table. */
export interface DistributedNow {
  table: string;
  placement: Placement;
  /** For a distributed table, the table it is co-located with (none for the first). */
  colocatedWith: string | null;
}

export interface DistributionOutcome {
  schema: string;
  /** The tables made reference or distributed by this run, in the order it made them. */
  done: DistributedNow[];
  /** How many tables were already what they should be. */
  already: number;
  /** The functions made Citus distributed functions by this run (DELEGATED_FUNCTIONS). */
  delegated: string[];
}

/** One table Citus would not make what src/db/distribution.ts says, and its reason. */
export interface Refusal {
  table: string;
  placement: Placement;
  reason: string;
}

/**
 * Citus refused one or more tables. Every table is tried (a refusal does not stop the others), so
 * that the message lists each refusal; a table with a foreign key into a refused one is refused
 * in turn.
 */
export class DistributionRefused extends Error {
  readonly refusals: Refusal[];
  /** What the run did before and besides the refusals. */
  readonly done: DistributedNow[];

  constructor(refusals: Refusal[], done: DistributedNow[]) {
    const lines = refusals.map(
      ({ table, placement, reason }) =>
        `  ${table} (${placement === 'reference' ? 'reference table' : `distributed by ${DISTRIBUTION_COLUMN}`}): ${reason}`,
    );
    super(`Citus refused ${refusals.length} table(s):\n${lines.join('\n')}`);
    this.name = 'DistributionRefused';
    this.refusals = refusals;
    this.done = done;
  }
}

interface TableRow {
  name: string;
  partmethod: string | null;
  repmodel: string | null;
  column: string | null;
}

export interface DistributeOptions {
  /** citus.shard_count for the tables distributed by this run (tests use a few). */
  shardCount?: number;
}

/**
 * After the migrations, on a database with the citus extension (decision 0073): makes every table
 * of the current schema a reference table or a table distributed by tenant_id, as
 * src/db/distribution.ts says, the distributed ones co-located. Tables already placed are skipped,
 * so that it runs at every start; reference tables go first, then the distributed ones, each after
 * the tables it has foreign keys into. Returns null where Citus is not installed (PGlite, plain
 * PostgreSQL). A table in neither list, or one Citus refuses, fails it with the table's name.
 */
export async function distributeTables(
  db: Db,
  options: DistributeOptions = {},
): Promise<DistributionOutcome | null> {
  // One connection throughout: the settings and the lock below are the session's.
  return db.connection().execute(async (conn) => {
    const citus = await sql<{
      one: number;
    }>`SELECT 1 AS one FROM pg_extension WHERE extname = 'citus'`.execute(conn);
    if (citus.rows.length === 0) return null;
    const { rows } = await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(conn);
    const schema = rows[0]?.schema;
    if (!schema) throw new Error('no current schema to distribute');
    const found = await tablesOf(conn, schema);
    if (found.every(isPlaced) && (await undelegated(conn, schema)).length === 0)
      return { schema, done: [], already: found.length, delegated: [] };
    // Processes started together on a new database: one places the tables, the others wait for it
    // and then find them placed.
    const lockKey = `waybill.distribute.${schema}`;
    await sql`SELECT pg_advisory_lock(hashtext(${lockKey}))`.execute(conn);
    try {
      const placed = await placeTables(conn, schema, options);
      return { ...placed, delegated: await delegateFunctions(conn, schema) };
    } finally {
      await sql`SELECT pg_advisory_unlock(hashtext(${lockKey}))`.execute(conn).catch(() => {});
    }
  });
}

/** The tables of the schema (partitions apart: they follow their table), as Citus has them now. */
async function tablesOf(conn: Db, schema: string): Promise<TableRow[]> {
  const { rows: tables } = await sql<TableRow>`
    SELECT c.relname AS name, p.partmethod, p.repmodel,
      CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS column
    FROM pg_class c LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
    WHERE c.relnamespace = ${schema}::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition`.execute(
    conn,
  );
  const unlisted = tables.filter((table) => placementOf(table.name) === null).map((table) => table.name);
  if (unlisted.length > 0)
    throw new Error(
      `tables in neither list of src/db/distribution.ts (distributed by ${DISTRIBUTION_COLUMN}, or reference), ` +
        `not distributed on Citus: ${unlisted.sort().join(', ')}`,
    );
  return tables;
}

/** Whether Citus has the table as its list says: replicated ('n', 't') or hashed on tenant_id. */
function isPlaced(table: TableRow): boolean {
  return placementOf(table.name) === 'reference'
    ? table.partmethod === 'n' && table.repmodel === 't'
    : table.partmethod === 'h' && table.column === DISTRIBUTION_COLUMN;
}

/** The DELEGATED_FUNCTIONS of the schema that are not Citus distributed functions yet. */
async function undelegated(conn: Db, schema: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT p.proname AS name FROM pg_proc p
    WHERE p.pronamespace = ${schema}::regnamespace AND p.proname = ANY (${[...DELEGATED_FUNCTIONS]}::text[])
      AND NOT EXISTS (
        SELECT 1 FROM pg_dist_object o
        WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid AND o.distribution_argument_index IS NOT NULL
      )
    ORDER BY p.proname`.execute(conn);
  return rows.map((row) => row.name);
}

/**
 * Makes each of DELEGATED_FUNCTIONS a distributed function routed by its first argument (the
 * company) and co-located with DELEGATED_WITH, so that Citus runs a call on the company's node.
 * After the tables: the co-location needs them distributed.
 */
async function delegateFunctions(conn: Db, schema: string): Promise<string[]> {
  const names = await undelegated(conn, schema);
  for (const name of names)
    await sql`SELECT create_distributed_function(
        (SELECT p.oid::regprocedure FROM pg_proc p
          WHERE p.pronamespace = ${schema}::regnamespace AND p.proname = ${name}),
        '$1', colocate_with => ${`${quoteIdent(schema)}.${quoteIdent(DELEGATED_WITH)}`})`.execute(conn);
  return names;
}

async function placeTables(
  conn: Db,
  schema: string,
  options: DistributeOptions,
): Promise<Omit<DistributionOutcome, 'delegated'>> {
  const tables = await tablesOf(conn, schema);
  const { rows: keys } = await sql<{ from: string; to: string }>`
    SELECT DISTINCT f.relname AS from, t.relname AS to
    FROM pg_constraint k JOIN pg_class f ON f.oid = k.conrelid JOIN pg_class t ON t.oid = k.confrelid
    WHERE k.contype = 'f' AND k.conparentid = 0 AND f.relnamespace = ${schema}::regnamespace
      AND t.relnamespace = ${schema}::regnamespace AND f.oid <> t.oid`.execute(conn);
  const order = inForeignKeyOrder(
    tables.map((table) => table.name),
    keys,
  );
  const byName = new Map(tables.map((table) => [table.name, table]));
  const qualified = (table: string) => `${quoteIdent(schema)}.${quoteIdent(table)}`;

  // Without this, making the first reference table would turn every local table with a foreign
  // key into it into a "Citus local table", which then cannot be distributed in turn.
  await sql`SET citus.enable_local_reference_table_foreign_keys = off`.execute(conn);
  // A table with foreign keys into reference tables made in the same run is distributed over one
  // connection per node: Citus refuses its parallel DDL after DDL on those reference tables.
  await sql`SET citus.multi_shard_modify_mode = 'sequential'`.execute(conn);
  try {
    if (options.shardCount !== undefined) {
      if (!Number.isInteger(options.shardCount) || options.shardCount < 1)
        throw new Error(`shard count must be a positive integer (got ${options.shardCount})`);
      await sql`SELECT set_config('citus.shard_count', ${String(options.shardCount)}, false)`.execute(conn);
    }
    await sql.raw(PLACE_FUNCTION).execute(conn);
    const done: DistributedNow[] = [];
    const refusals: Refusal[] = [];
    let already = 0;
    let anchor: string | null =
      order.find((name) => placementOf(name) === 'distributed' && byName.get(name)?.partmethod === 'h') ??
      null;
    for (const placement of ['reference', 'distributed'] as const) {
      for (const name of order.filter((table) => placementOf(table) === placement)) {
        const table = byName.get(name) as TableRow;
        if (isPlaced(table)) {
          already += 1;
          continue;
        }
        if (placement === 'distributed' && table.partmethod === 'h') {
          refusals.push({ table: name, placement, reason: `already distributed by ${table.column}` });
          continue;
        }
        const colocatedWith = placement === 'distributed' ? anchor : null;
        const { rows } = await sql<{ refused: string | null }>`SELECT pg_temp.waybill_place(
            ${qualified(name)}::regclass, ${placement === 'reference'},
            ${colocatedWith ? qualified(colocatedWith) : 'none'}) AS refused`.execute(conn);
        const refused = rows[0]?.refused;
        if (refused) {
          refusals.push({ table: name, placement, reason: refused });
          continue;
        }
        if (placement === 'distributed') anchor ??= name;
        done.push({ table: name, placement, colocatedWith });
      }
    }
    if (refusals.length > 0) throw new DistributionRefused(refusals, done);
    return { schema, done, already };
  } finally {
    await sql`RESET citus.enable_local_reference_table_foreign_keys`.execute(conn).catch(() => {});
    await sql`RESET citus.shard_count`.execute(conn).catch(() => {});
    await sql`RESET citus.multi_shard_modify_mode`.execute(conn).catch(() => {});
    await sql`DROP FUNCTION IF EXISTS pg_temp.waybill_place`.execute(conn).catch(() => {});
  }
}

/** The lines `waybill migrate` prints about the distribution step. */
export function describeDistribution(outcome: DistributionOutcome): string[] {
  const delegated = outcome.delegated.map(
    (name) => `Citus: ${name} made a distributed function, run on its company's node`,
  );
  if (outcome.done.length === 0)
    return [
      `Citus: all ${outcome.already} tables were already reference or distributed tables`,
      ...delegated,
    ];
  const tables = outcome.done.map((step) =>
    step.placement === 'reference'
      ? `Citus: ${step.table} made a reference table`
      : `Citus: ${step.table} distributed by ${DISTRIBUTION_COLUMN}${
          step.colocatedWith ? `, co-located with ${step.colocatedWith}` : ''
        }`,
  );
  return [...tables, ...delegated];
}

/**
 * The tables with each one after those it has foreign keys into (a referenced table must be placed
 * first), otherwise in the order of the lists; a cycle's tables come last, in that order.
 */
export function inForeignKeyOrder(tables: string[], keys: { from: string; to: string }[]): string[] {
  const listed: string[] = [...REFERENCE_TABLES, ...DISTRIBUTED_TABLES];
  const rank = (name: string) => {
    const index = listed.indexOf(name);
    return index === -1 ? listed.length : index;
  };
  const pending = [...tables].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const order: string[] = [];
  while (pending.length > 0) {
    const ready = pending.findIndex((name) =>
      keys.every((key) => key.from !== name || !pending.includes(key.to) || key.to === name),
    );
    const [next] = pending.splice(ready === -1 ? 0 : ready, 1);
    order.push(next as string);
  }
  return order;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Makes one table a reference or a distributed table, and returns Citus's reason when it refuses
 * (message, detail, hint), null when it did it. Caught here and not by the driver: its errors lose
 * their detail to scrub.ts, and the detail is where Citus says why. A detail quoting a row's
 * values (a key, a failing row) is left out all the same. A temporary function: nothing stays in
 * the schema (Citus warns that it is created on the coordinator only, which is all it needs).
 */
const PLACE_FUNCTION = `
CREATE OR REPLACE FUNCTION pg_temp.waybill_place(relation regclass, reference boolean, colocate text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE message text; detail text; hint text;
BEGIN
  IF reference THEN
    PERFORM create_reference_table(relation);
  ELSE
    PERFORM create_distributed_table(relation, '${DISTRIBUTION_COLUMN}', colocate_with => colocate);
  END IF;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
  IF detail ~ '^(Key |Failing row)' THEN detail := NULL; END IF;
  RETURN concat_ws(' ', message || '.', nullif(detail, ''), nullif(hint, ''));
END $$`;

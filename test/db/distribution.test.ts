import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.ts';
import { describeDistribution, distributeTables, inForeignKeyOrder } from '../../src/db/distribute.ts';
import {
  DISTRIBUTED_TABLES,
  DISTRIBUTION_COLUMN,
  placementOf,
  REFERENCE_TABLES,
  TABLES_BEING_REMOVED,
} from '../../src/db/distribution.ts';
import { onCitus, startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * The schema, read from the catalog of a migrated database, is fit for Citus (decision 0073):
 * each failure names every offending table, constraint, index or trigger, so that the message is a
 * checklist for the migration that fixes them. Engine-independent: not repeated on Citus, where
 * the harness distributes the schema first (test/db/citus-distribution.test.ts checks the result).
 */
describe.skipIf(onCitus)('the tables and their distribution on Citus', () => {
  let waybill: TestWaybill;
  let db: Db;

  beforeAll(async () => {
    waybill = await startWaybill();
    db = waybill.ctx.db;
  });
  afterAll(async () => {
    await waybill?.close();
  });

  const ACTIONS: Record<string, string> = { n: 'SET NULL', d: 'SET DEFAULT', c: 'CASCADE' };

  const tables = async () => {
    const { rows } = await sql<{ name: string }>`
      SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace
        AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      ORDER BY c.relname`.execute(db);
    return rows.map((row) => row.name);
  };

  it('puts every table in exactly one list: distributed by tenant_id, or reference', async () => {
    const present = await tables();
    const listed = [...DISTRIBUTED_TABLES, ...REFERENCE_TABLES] as string[];
    const inBoth = DISTRIBUTED_TABLES.filter((t) => (REFERENCE_TABLES as readonly string[]).includes(t));
    const twiceInOne = [DISTRIBUTED_TABLES, REFERENCE_TABLES].flatMap((list) =>
      list.filter((t, i) => list.indexOf(t as never) !== i),
    );
    const problems = [
      ...present
        .filter((t) => placementOf(t) === null)
        .map((t) => `${t}: in neither list of src/db/distribution.ts (distributed or reference)`),
      ...inBoth.map((t) => `${t}: in both lists`),
      ...twiceInOne.map((t) => `${t}: twice in one list`),
      ...listed
        .filter((t) => !present.includes(t) && !TABLES_BEING_REMOVED.includes(t))
        .map((t) => `${t}: listed, but the schema has no such table`),
    ];
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('gives every distributed table a NOT NULL tenant_id in its primary key and every unique constraint and index', async () => {
    const distributed = (await tables()).filter((t) => placementOf(t) === 'distributed');
    const { rows: columns } = await sql<{ table: string; not_null: boolean }>`
      SELECT c.relname AS table, a.attnotnull AS not_null
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relnamespace = current_schema()::regnamespace AND a.attname = ${DISTRIBUTION_COLUMN}
        AND NOT a.attisdropped`.execute(db);
    const { rows: primaryKeys } = await sql<{ table: string }>`
      SELECT c.relname AS table FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
      WHERE c.relnamespace = current_schema()::regnamespace AND k.contype = 'p'`.execute(db);
    // Every unique index: a primary key's, a unique constraint's, or one made by CREATE UNIQUE INDEX
    // (an expression's columns are not columns: tenant_id must be one of the plain ones).
    const { rows: uniques } = await sql<{ table: string; name: string; kind: string; has_tenant: boolean }>`
      SELECT c.relname AS table, i.relname AS name,
        CASE k.contype WHEN 'p' THEN 'primary key' WHEN 'u' THEN 'unique constraint'
          WHEN 'x' THEN 'exclusion constraint' ELSE 'unique index' END AS kind,
        EXISTS (
          SELECT 1 FROM pg_attribute a
          WHERE a.attrelid = c.oid AND a.attname = ${DISTRIBUTION_COLUMN}
            AND a.attnum = ANY (x.indkey::int2[])
        ) AS has_tenant
      FROM pg_index x
      JOIN pg_class c ON c.oid = x.indrelid
      JOIN pg_class i ON i.oid = x.indexrelid
      LEFT JOIN pg_constraint k ON k.conindid = x.indexrelid AND k.conrelid = c.oid
      WHERE c.relnamespace = current_schema()::regnamespace
        AND (x.indisunique OR k.contype = 'x')
      ORDER BY c.relname, i.relname`.execute(db);
    const problems: string[] = [];
    for (const table of distributed) {
      const column = columns.find((row) => row.table === table);
      if (!column) problems.push(`${table}: no ${DISTRIBUTION_COLUMN} column`);
      else if (!column.not_null)
        problems.push(`${table}.${DISTRIBUTION_COLUMN}: nullable (must be NOT NULL)`);
      if (!primaryKeys.some((row) => row.table === table)) problems.push(`${table}: no primary key`);
      for (const unique of uniques.filter((row) => row.table === table && !row.has_tenant))
        problems.push(`${table}: ${unique.kind} ${unique.name} does not include ${DISTRIBUTION_COLUMN}`);
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('has no foreign key from a reference table into a distributed one, tenant_id on both sides between distributed tables, and no SET NULL or SET DEFAULT of tenant_id', async () => {
    const { rows: keys } = await sql<{
      name: string;
      from_table: string;
      to_table: string;
      tenant_paired: boolean;
      tenant_referencing: boolean;
      on_delete: string;
      on_update: string;
    }>`
      SELECT k.conname AS name, f.relname AS from_table, t.relname AS to_table,
        k.confdeltype AS on_delete, k.confupdtype AS on_update,
        EXISTS (
          SELECT 1 FROM pg_attribute fa
          WHERE fa.attrelid = k.conrelid AND fa.attnum = ANY (k.conkey) AND fa.attname = ${DISTRIBUTION_COLUMN}
        ) AS tenant_referencing,
        EXISTS (
          SELECT 1
          FROM unnest(k.conkey, k.confkey) AS pair(from_column, to_column)
          JOIN pg_attribute fa ON fa.attrelid = k.conrelid AND fa.attnum = pair.from_column
          JOIN pg_attribute ta ON ta.attrelid = k.confrelid AND ta.attnum = pair.to_column
          WHERE fa.attname = ${DISTRIBUTION_COLUMN} AND ta.attname = ${DISTRIBUTION_COLUMN}
        ) AS tenant_paired
      FROM pg_constraint k
      JOIN pg_class f ON f.oid = k.conrelid
      JOIN pg_class t ON t.oid = k.confrelid
      WHERE k.contype = 'f' AND k.conparentid = 0
        AND f.relnamespace = current_schema()::regnamespace
      ORDER BY f.relname, k.conname`.execute(db);
    const problems: string[] = [];
    for (const key of keys) {
      const from = placementOf(key.from_table);
      const to = placementOf(key.to_table);
      if (from === 'reference' && to === 'distributed')
        problems.push(
          `${key.from_table}: foreign key ${key.name} from a reference table into the distributed ${key.to_table}`,
        );
      if (from === 'distributed' && to === 'distributed' && !key.tenant_paired)
        problems.push(
          `${key.from_table}: foreign key ${key.name} into ${key.to_table} does not pair ${DISTRIBUTION_COLUMN} with ${DISTRIBUTION_COLUMN}`,
        );
      // Citus will not set the shard key to NULL or a default, nor cascade an update to it.
      if (from === 'distributed' && key.tenant_referencing) {
        if (['n', 'd'].includes(key.on_delete))
          problems.push(
            `${key.from_table}: foreign key ${key.name} includes ${DISTRIBUTION_COLUMN}: ON DELETE ${ACTIONS[key.on_delete]} is refused by Citus (even with a column list; use CASCADE, RESTRICT or NO ACTION)`,
          );
        if (['n', 'd', 'c'].includes(key.on_update))
          problems.push(
            `${key.from_table}: foreign key ${key.name} includes ${DISTRIBUTION_COLUMN}: ON UPDATE ${ACTIONS[key.on_update]} is refused by Citus`,
          );
      }
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('has no triggers of its own on any table', async () => {
    const { rows } = await sql<{ table: string; name: string }>`
      SELECT c.relname AS table, g.tgname AS name
      FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
      WHERE c.relnamespace = current_schema()::regnamespace AND NOT g.tgisinternal
      ORDER BY c.relname, g.tgname`.execute(db);
    const problems = rows.map((row) => `${row.table}: trigger ${row.name}`);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('leaves the tables alone where Citus is not installed', async () => {
    expect(await distributeTables(db)).toBeNull();
  });
});

describe('the order the distribution step places tables in', () => {
  it('puts each table after those it has foreign keys into, otherwise in the order of the lists', () => {
    const keys = [
      { from: 'shipments', to: 'customer_accounts' },
      { from: 'customer_accounts', to: 'companies' },
      { from: 'memberships', to: 'users' },
    ];
    expect(
      inForeignKeyOrder(['shipments', 'memberships', 'customer_accounts', 'users', 'companies'], keys),
    ).toEqual(['companies', 'users', 'memberships', 'customer_accounts', 'shipments']);
  });

  it('keeps the tables of a cycle, in the order of the lists, rather than losing them', () => {
    const keys = [
      { from: 'shipments', to: 'events' },
      { from: 'events', to: 'shipments' },
    ];
    expect(inForeignKeyOrder(['events', 'shipments'], keys)).toEqual(['shipments', 'events']);
  });
});

describe('what waybill migrate prints of the distribution step', () => {
  it('a line per table placed, or that all were already', () => {
    expect(
      describeDistribution({
        schema: 'public',
        done: [
          { table: 'companies', placement: 'reference', colocatedWith: null },
          { table: 'customer_accounts', placement: 'distributed', colocatedWith: null },
          { table: 'shipments', placement: 'distributed', colocatedWith: 'customer_accounts' },
        ],
        already: 0,
        delegated: ['webhook_claim_tenant'],
      }),
    ).toEqual([
      'Citus: companies made a reference table',
      'Citus: customer_accounts distributed by tenant_id',
      'Citus: shipments distributed by tenant_id, co-located with customer_accounts',
      "Citus: webhook_claim_tenant made a distributed function, run on its company's node",
    ]);
    expect(describeDistribution({ schema: 'public', done: [], already: 39, delegated: [] })).toEqual([
      'Citus: all 39 tables were already reference or distributed tables',
    ]);
  });
});

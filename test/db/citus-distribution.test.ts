import { type Kysely, sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/database.ts';
import { DistributionRefused, distributeTables } from '../../src/db/distribute.ts';
import {
  DELEGATED_FUNCTIONS,
  DELEGATED_WITH,
  DISTRIBUTION_COLUMN,
  placementOf,
} from '../../src/db/distribution.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import * as claimRateLimitsApart from '../../src/db/migrations/0082_claim_rate_limits_apart.ts';
import { CITUS_TEST_SHARD_COUNT, createSchema, onCitus, TEST_SECRET_KEY } from '../support/harness.ts';

/**
 * The distribution step on a Citus cluster (decision 0073): the project 'citus' only, which
 * exists when WAYBILL_TEST_CITUS_URL names a coordinator (vitest.config.ts).
 */
describe.skipIf(!onCitus)('the distribution step on Citus', () => {
  const opened: DatabaseHandle[] = [];
  afterAll(async () => {
    for (const database of opened) await database.close();
  });

  /** A database handle on a new schema of the coordinator. */
  async function freshSchema(): Promise<{ database: DatabaseHandle; schema: string }> {
    const schema = await createSchema();
    const config = loadConfig({
      WAYBILL_DATABASE_URL: process.env.WAYBILL_TEST_DATABASE_URL as string,
      WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
    });
    const database = await openDatabase(config, { schema, poolSize: 2 });
    opened.push(database);
    return { database, schema };
  }

  interface Placed {
    table: string;
    partmethod: string;
    repmodel: string;
    colocationid: number;
    column: string | null;
    shards: number;
  }

  async function placements(database: DatabaseHandle, schema: string): Promise<Placed[]> {
    const { rows } = await sql<Placed>`
      SELECT c.relname AS table, p.partmethod, p.repmodel, p.colocationid,
        CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS column,
        (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid)::int AS shards
      FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
      WHERE c.relnamespace = ${schema}::regnamespace AND NOT c.relispartition
      ORDER BY c.relname`.execute(database.db);
    return rows;
  }

  /** Reference tables replicated ('n', 't'), the others hashed on tenant_id, all in one group. */
  function expectPlacedAsListed(placed: Placed[]) {
    const reference = placed.filter((row) => placementOf(row.table) === 'reference');
    const distributed = placed.filter((row) => placementOf(row.table) === 'distributed');
    for (const row of reference) expect(row, row.table).toMatchObject({ partmethod: 'n', repmodel: 't' });
    for (const row of distributed)
      expect(row, row.table).toMatchObject({ partmethod: 'h', column: DISTRIBUTION_COLUMN });
    expect(new Set(distributed.map((row) => row.colocationid)).size).toBe(1);
  }

  it('places a schema of conforming tables, reference ones first and each after the tables it refers to, and does nothing the second time', async () => {
    const { database, schema } = await freshSchema();
    // Created in an order the step must not follow: shipments refers to customer_accounts.
    for (const statement of [
      'CREATE TABLE companies (id text PRIMARY KEY)',
      'CREATE TABLE users (id text PRIMARY KEY)',
      'CREATE TABLE memberships (id text PRIMARY KEY, user_id text NOT NULL REFERENCES users (id), company_id text NOT NULL REFERENCES companies (id))',
      'CREATE TABLE shipments (tenant_id text NOT NULL REFERENCES companies (id), id text NOT NULL, customer_account_id text, PRIMARY KEY (tenant_id, id))',
      'CREATE TABLE customer_accounts (tenant_id text NOT NULL REFERENCES companies (id), id text NOT NULL, PRIMARY KEY (tenant_id, id))',
      'ALTER TABLE shipments ADD FOREIGN KEY (tenant_id, customer_account_id) REFERENCES customer_accounts (tenant_id, id)',
      `CREATE TABLE webhook_attempts (tenant_id text NOT NULL, id text NOT NULL, created_at timestamptz NOT NULL,
         PRIMARY KEY (tenant_id, id, created_at)) PARTITION BY RANGE (created_at)`,
      `CREATE TABLE webhook_attempts_20261121 PARTITION OF webhook_attempts
         FOR VALUES FROM ('2026-11-21') TO ('2026-11-22')`,
      "INSERT INTO companies VALUES ('cmp_1')",
      "INSERT INTO customer_accounts VALUES ('cmp_1', 'acc_1')",
      "INSERT INTO shipments VALUES ('cmp_1', 'shp_1', 'acc_1')",
    ])
      await sql.raw(statement).execute(database.db);

    const first = await distributeTables(database.db, { shardCount: CITUS_TEST_SHARD_COUNT });
    expect(first?.done).toEqual([
      { table: 'companies', placement: 'reference', colocatedWith: null },
      { table: 'users', placement: 'reference', colocatedWith: null },
      { table: 'memberships', placement: 'reference', colocatedWith: null },
      { table: 'customer_accounts', placement: 'distributed', colocatedWith: null },
      { table: 'shipments', placement: 'distributed', colocatedWith: 'customer_accounts' },
      { table: 'webhook_attempts', placement: 'distributed', colocatedWith: 'customer_accounts' },
    ]);
    const second = await distributeTables(database.db, { shardCount: CITUS_TEST_SHARD_COUNT });
    expect(second).toEqual({ schema, done: [], already: 6, delegated: [] });

    const placed = await placements(database, schema);
    expect(placed.map((row) => row.table)).toEqual([
      'companies',
      'customer_accounts',
      'memberships',
      'shipments',
      'users',
      'webhook_attempts',
    ]);
    expectPlacedAsListed(placed);
    for (const row of placed.filter((r) => r.partmethod === 'h'))
      expect(row.shards).toBe(CITUS_TEST_SHARD_COUNT);
    // The rows are still there, now on the workers, and the partition followed its table.
    const { rows } = await sql<{ id: string }>`SELECT id FROM shipments`.execute(database.db);
    expect(rows).toEqual([{ id: 'shp_1' }]);
    const { rows: partitions } = await sql<{ partmethod: string }>`
      SELECT partmethod FROM pg_dist_partition
      WHERE logicalrelid = ${`${schema}.webhook_attempts_20261121`}::regclass`.execute(database.db);
    expect(partitions).toEqual([{ partmethod: 'h' }]);
  });

  it('places the tables once when two processes start together', async () => {
    const { database, schema } = await freshSchema();
    await sql`CREATE TABLE companies (id text PRIMARY KEY)`.execute(database.db);
    await sql`CREATE TABLE customer_accounts (tenant_id text NOT NULL REFERENCES companies (id), id text NOT NULL,
      PRIMARY KEY (tenant_id, id))`.execute(database.db);
    const config = loadConfig({
      WAYBILL_DATABASE_URL: process.env.WAYBILL_TEST_DATABASE_URL as string,
      WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
    });
    const other = await openDatabase(config, { schema, poolSize: 1 });
    opened.push(other);
    const outcomes = await Promise.all([
      distributeTables(database.db, { shardCount: CITUS_TEST_SHARD_COUNT }),
      distributeTables(other.db, { shardCount: CITUS_TEST_SHARD_COUNT }),
    ]);
    expect(outcomes.map((outcome) => outcome?.done.length).sort()).toEqual([0, 2]);
    expectPlacedAsListed(await placements(database, schema));
  });

  it('refuses a table in neither list, naming it, before placing anything', async () => {
    const { database, schema } = await freshSchema();
    await sql`CREATE TABLE companies (id text PRIMARY KEY)`.execute(database.db);
    await sql`CREATE TABLE parcel_lockers (id text PRIMARY KEY)`.execute(database.db);
    await expect(distributeTables(database.db)).rejects.toThrow(/neither list.*: parcel_lockers$/);
    expect(await placements(database, schema)).toEqual([]);
  });

  it("names each table Citus refuses with Citus's reason, and places the others", async () => {
    const { database, schema } = await freshSchema();
    await sql`CREATE TABLE companies (id text PRIMARY KEY)`.execute(database.db);
    await sql`CREATE TABLE customer_accounts (tenant_id text NOT NULL, id text PRIMARY KEY)`.execute(
      database.db,
    );
    await sql`CREATE TABLE events (tenant_id text NOT NULL, id text NOT NULL, PRIMARY KEY (tenant_id, id))`.execute(
      database.db,
    );
    const failure = await distributeTables(database.db).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(DistributionRefused);
    const refused = failure as DistributionRefused;
    expect(refused.refusals).toEqual([
      {
        table: 'customer_accounts',
        placement: 'distributed',
        reason: expect.stringContaining(
          'Distributed relations cannot have UNIQUE, EXCLUDE, or PRIMARY KEY constraints that do not include the partition column',
        ),
      },
    ]);
    expect(refused.message).toMatch(
      /^Citus refused 1 table\(s\):\n {2}customer_accounts \(distributed by tenant_id\): /,
    );
    expect((await placements(database, schema)).map((row) => [row.table, row.partmethod])).toEqual([
      ['companies', 'n'],
      ['events', 'h'],
    ]);
  });

  it('places every table of a freshly migrated schema and delegates the per-company functions, and does nothing the second time', async () => {
    const { database, schema } = await freshSchema();
    await migrateToLatest(database.db);
    const first = await distributeTables(database.db, { shardCount: CITUS_TEST_SHARD_COUNT });
    expect(first?.done.length).toBeGreaterThan(0);
    expect(first?.delegated).toEqual([...DELEGATED_FUNCTIONS].sort());
    const second = await distributeTables(database.db, { shardCount: CITUS_TEST_SHARD_COUNT });
    expect(second?.done).toEqual([]);
    expect(second?.delegated).toEqual([]);
    expectPlacedAsListed(await placements(database, schema));

    // Routed by the company (argument 1) and co-located with the delivery log.
    const { rows: functions } = await sql<{ name: string; arg: number; same_group: boolean }>`
      SELECT p.proname AS name, o.distribution_argument_index AS arg,
        o.colocationid = (SELECT colocationid FROM pg_dist_partition
          WHERE logicalrelid = ${`${schema}.${DELEGATED_WITH}`}::regclass) AS same_group
      FROM pg_dist_object o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND p.oid = o.objid
      WHERE p.pronamespace = ${schema}::regnamespace AND o.distribution_argument_index IS NOT NULL
      ORDER BY p.proname`.execute(database.db);
    expect(functions).toEqual(
      [...DELEGATED_FUNCTIONS].sort().map((name) => ({ name, arg: 0, same_group: true })),
    );
    // A call is sent whole to the node that holds the company's shard.
    const { rows: plan } = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN (COSTS OFF) SELECT * FROM webhook_claim_tenant('cmp_somewhere', 'w', now(), now(), 1, 1,
        '{}'::text[], '{}'::int[], '', 1, NULL::text[])`.execute(database.db);
    const text = plan.map((row) => row['QUERY PLAN']).join('\n');
    expect(text).toContain('Custom Scan (Citus Adaptive)');
    expect(text).toMatch(/Task Count: 1/);
    expect(text).toMatch(/Node: host=\S+ port=\d+/);
  });

  it('carries a later migration that replaces a delegated function to every node, and keeps it delegated', async () => {
    const { database, schema } = await freshSchema();
    await migrateToLatest(database.db);
    await distributeTables(database.db, { shardCount: CITUS_TEST_SHARD_COUNT });
    // What an upgrade of a running cluster does: migration 0082 replaced on the coordinator.
    const migrations = database.db as unknown as Kysely<unknown>;
    await claimRateLimitsApart.down(migrations);
    const onNodes = async () => {
      const { rows } = await sql<{ result: string }>`
        SELECT result FROM run_command_on_all_nodes(format(
          $q$SELECT count(*) FROM pg_proc WHERE proname = 'webhook_claim_tenant'
            AND pronamespace = %L::regnamespace AND prosrc LIKE '%%FOR UPDATE OF s%%'$q$, ${schema}::text))`.execute(
        database.db,
      );
      return rows.map((row) => row.result);
    };
    expect(await onNodes()).toEqual(['0', '0', '0']);
    await claimRateLimitsApart.up(migrations);
    expect(await onNodes()).toEqual(['1', '1', '1']);
    const { rows } = await sql<{ arg: number }>`
      SELECT o.distribution_argument_index AS arg FROM pg_dist_object o
      WHERE o.classid = 'pg_proc'::regclass
        AND o.objid = ${`${schema}.webhook_claim_tenant`}::regproc`.execute(database.db);
    expect(rows).toEqual([{ arg: 0 }]);
  });
});

import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { buildApp, buildContext } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { AppContext } from '../../src/context.ts';
import { openDatabase } from '../../src/db/database.ts';
import { distributeTables } from '../../src/db/distribute.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { randomBase62 } from '../../src/lib/ids.ts';
import { storedMessageProblems } from './message-check.ts';
import { TEMPLATE_PATH } from './pglite-template.ts';

export const TEST_SECRET_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

export interface TestWaybill {
  ctx: AppContext;
  app: FastifyInstance;
  clock: ManualClock;
  /** The listening address, e.g. http://localhost:40123 (also the OAuth issuer). */
  url: string;
  /** The PostgreSQL schema of this instance, when on PostgreSQL. */
  schema: string | null;
  close(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  /** Where the instance logs (tests that read the log); silent by default. */
  logger?: Logger;
}

export const engine = (process.env.WAYBILL_TEST_ENGINE ?? 'pglite') as 'pglite' | 'postgres';
/** Whether the PostgreSQL under test is a Citus coordinator (the project 'citus'). */
export const onCitus = process.env.WAYBILL_TEST_ON_CITUS === '1';
/** Few shards per table on the test cluster: each file distributes a whole schema of its own. */
export const CITUS_TEST_SHARD_COUNT = 4;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Creates an empty schema on the test PostgreSQL server; each test file gets its own. */
export async function createSchema(): Promise<string> {
  const schema = `t_${randomBase62(12).toLowerCase()}`;
  const client = new pg.Client({ connectionString: process.env.WAYBILL_TEST_DATABASE_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.end();
  return schema;
}

/**
 * Drops every test schema. Run once before and once after the whole PostgreSQL run (vitest
 * global setup), never per file: Kysely's migrator looks through every schema's tables, and a
 * schema dropped by one file while another file migrates makes that lookup fail.
 */
export async function dropTestSchemas(connectionString: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  const { rows } = await client.query<{ name: string }>(
    String.raw`SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 't\_%'`,
  );
  for (const { name } of rows) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  await client.end();
}

/**
 * Starts a whole Waybill on a fresh database of the engine under test, listening on 127.0.0.1,
 * with a manual clock. Tests talk to it over HTTP (app.inject or real requests to `url`).
 */
export async function startWaybill(options: StartOptions = {}): Promise<TestWaybill> {
  const postgresUrl = process.env.WAYBILL_TEST_DATABASE_URL;
  const onPostgres = engine === 'postgres';
  if (onPostgres && !postgresUrl) throw new Error('WAYBILL_TEST_DATABASE_URL is not set');
  const configAt = (port: number) =>
    loadConfig({
      PORT: String(port),
      WAYBILL_DATABASE_URL: onPostgres ? (postgresUrl as string) : 'memory:',
      WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
      WAYBILL_DEMO: '0',
      WAYBILL_REVIEWER_EMAILS: 'reviewer@example.test',
      WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
      ...options.env,
    });
  const schema = onPostgres ? await createSchema() : null;
  const database = await openDatabase(configAt(0), {
    ...(schema ? { schema } : {}),
    ...(onPostgres ? {} : { loadDataDir: new Blob([readFileSync(TEMPLATE_PATH)]) }),
  });
  await migrateToLatest(database.db);
  // The Citus project (vitest.config.ts): the schema's tables distributed, as `waybill migrate` does.
  if (onCitus) {
    await distributeTables(database.db, { shardCount: CITUS_TEST_SHARD_COUNT });
    database.distributed = true;
  }
  const clock = options.clock ?? new ManualClock('2026-11-21T12:00:00.000Z');
  const logger = options.logger ?? pino({ level: process.env.WAYBILL_TEST_LOG ?? 'silent' });
  // The port is in the configuration (it is the OAuth issuer), so it is chosen before listening;
  // a parallel test file can take it in between, and then another one is tried.
  for (let attempt = 1; ; attempt++) {
    const config = configAt(await freePort());
    const ctx = buildContext({ config, database, clock, logger });
    const app = await buildApp(ctx);
    try {
      await app.listen({ port: config.port, host: '127.0.0.1' });
    } catch (error) {
      await app.close();
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < 5) continue;
      await database.close();
      throw error;
    }
    return {
      ctx,
      app,
      clock,
      url: config.baseUrl,
      schema,
      async close() {
        // Every message this Waybill built, sent or not, is valid against its published schema
        // (unless a test left the database unable to answer).
        const invalid = await storedMessageProblems(ctx.db).catch(() => []);
        await app.close();
        await database.close();
        if (invalid.length > 0)
          throw new Error(`messages not valid against their schemas:\n${invalid.join('\n')}`);
      },
    };
  }
}

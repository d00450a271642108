/**
 * What the webhook benchmarks share: a local receiver, companies, endpoints and events written as
 * the API writes them (the fan-out in the same transaction), and a throwaway PostgreSQL schema.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { type AppContext, runAfterCommit } from '../src/context.ts';
import { type DatabaseHandle, openDatabase } from '../src/db/database.ts';
import { distributeTables } from '../src/db/distribute.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newSigningSecret } from '../src/lib/crypto.ts';
import { newId, newTenantId, randomBase62 } from '../src/lib/ids.ts';
import { recordEvents } from '../src/modules/shipments/events.ts';
import { buildContext } from '../src/services.ts';
import { shipmentData } from './message.ts';

export const BENCH_SECRET_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

export interface Sink {
  url: string;
  arrivals: Map<string, number>;
  /** Requests received (an event sent to many endpoints arrives once per endpoint, one webhook-id). */
  received: { count: number };
  server: Server;
}

export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

export async function receiver(): Promise<Sink> {
  const arrivals = new Map<string, number>();
  const received = { count: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.set(String(req.headers['webhook-id']), performance.now());
      received.count += 1;
      res.end('ok');
    });
  });
  return { url: await listen(server), arrivals, received, server };
}

export async function insertEvents(
  ctx: AppContext,
  tenantId: string,
  count: number,
  perTx: number,
): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < count; done += perTx) {
    const n = Math.min(perTx, count - done);
    await ctx.db.transaction().execute(async (trx) => {
      const stored = await recordEvents(
        ctx,
        trx,
        Array.from({ length: n }, (_, k) => ({
          type: 'shipment.status_changed',
          tenantId,
          livemode: true,
          data: shipmentData(done + k),
          createdAt: new Date(),
          customerAccountId: null,
        })),
      );
      ids.push(...stored.map((e) => e.id));
    });
    runAfterCommit(ctx);
  }
  return ids;
}

/** The receiver's delivery controls an endpoint is made with (none by default). */
export interface EndpointControls {
  rate_limit?: number | null;
  ordering?: 'none' | 'per_shipment';
  /** The event version the endpoint is pinned to (the column's default, 2026-11-01, unless given). */
  api_version?: '2026-11-01' | '2026-12-01';
}

export async function addEndpoint(
  ctx: AppContext,
  tenantId: string,
  url: string,
  controls: EndpointControls = {},
): Promise<string> {
  const id = newId('we');
  const now = new Date();
  await ctx.db
    .insertInto('webhook_endpoints')
    .values({
      id,
      tenant_id: tenantId,
      customer_account_id: null,
      installation_id: null,
      livemode: true,
      url,
      description: null,
      event_types: JSON.stringify(['shipment.status_changed']),
      enabled: true,
      disabled_reason: null,
      secret_sealed: ctx.secrets.seal(newSigningSecret()),
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      failing_since: null,
      failing_noticed_at: null,
      kind: 'endpoint',
      app_id: null,
      held: false,
      rate_limit: controls.rate_limit ?? null,
      ordering: controls.ordering ?? 'none',
      ...(controls.api_version ? { api_version: controls.api_version } : {}),
      headers_sealed: null,
      paused_until: null,
      created_by: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

export async function waitFor(check: () => Promise<boolean> | boolean, everyMs = 20): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, everyMs));
}

export async function succeeded(ctx: AppContext, endpointIds: string[]): Promise<number> {
  const row = await ctx.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('endpoint_id', 'in', endpointIds)
    .where('status', '=', 'succeeded')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function newTenant(ctx: AppContext): Promise<string> {
  const id = newTenantId();
  const now = new Date();
  await ctx.db
    .insertInto('companies')
    .values({ id, name: 'Bench', live: true, created_at: now, updated_at: now })
    .execute();
  return id;
}

/**
 * Sends each worker process a command and waits for each to answer (`message`) or exit; resolves
 * with the answers (a worker process answers with its worker's counts, bench/worker-process.ts).
 */
export function tellAll(
  children: ChildProcess[],
  command: 'pause' | 'stop',
  until: 'message' | 'exit',
): Promise<unknown[]> {
  return Promise.all(
    children.map(
      (child) =>
        new Promise<unknown>((resolve) => {
          let answer: unknown = null;
          child.once('message', (message) => {
            answer = message;
            if (until === 'message') resolve(message);
          });
          if (until === 'exit') child.once('exit', () => resolve(answer));
          child.send(command);
        }),
    ),
  );
}

/** A schema of its own on the server at `url`, dropped by `drop`. */
export interface ThrowawaySchema {
  name: string;
  /** `url` with the schema as its search_path: what a `waybill` process is given. */
  url: string;
  drop(): Promise<void>;
}

export async function throwawaySchema(url: string, prefix = 'bench'): Promise<ThrowawaySchema> {
  const name = `${prefix}_${randomBase62(8).toLowerCase()}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE SCHEMA ${name}`);
  const inSchema = new URL(url);
  inSchema.searchParams.set('options', `-c search_path=${name}`);
  return { name, url: inSchema.toString(), drop: () => admin(`DROP SCHEMA ${name} CASCADE`) };
}

/** The services on `schema`, migrated, as the benchmarks drive them from their own process. */
export async function openBenchContext(
  url: string,
  schema: string,
): Promise<{ ctx: AppContext; database: DatabaseHandle }> {
  const config = loadConfig({
    WAYBILL_DATABASE_URL: url,
    WAYBILL_SECRET_KEY: BENCH_SECRET_KEY,
    WAYBILL_DEMO: '0',
    WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
  });
  const database = await openDatabase(config, { schema, poolSize: 10 });
  await migrateToLatest(database.db);
  const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
  return { ctx, database };
}

/**
 * On a Citus coordinator, as `waybill migrate` does: the schema's tables distributed by company
 * and the engine told so. Returns the engine's label with what was done, or as it was elsewhere.
 */
export async function distributeOnCitus(database: DatabaseHandle, label: string): Promise<string> {
  const placed = database.engine === 'postgres' ? await distributeTables(database.db) : null;
  if (!placed) return label;
  database.distributed = true;
  return `${label} on Citus (${placed.done.length} tables placed)`;
}

/** A receiver on 127.0.0.1 that answers 200 and tells when the next request arrives. */
export interface CountingReceiver {
  url: string;
  received(): number;
  /** Resolves with performance.now() at the next request's arrival (its headers). */
  nextArrival(): Promise<number>;
  close(): Promise<void>;
}

export async function countingReceiver(): Promise<CountingReceiver> {
  let count = 0;
  let waiting: Array<(at: number) => void> = [];
  const server: Server = createServer((req, res) => {
    const at = performance.now();
    count += 1;
    for (const resolve of waiting) resolve(at);
    waiting = [];
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  return {
    url: await listen(server),
    received: () => count,
    nextArrival: () => new Promise((resolve) => waiting.push(resolve)),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

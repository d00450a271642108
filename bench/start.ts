/**
 * Start-to-first-delivery benchmark (issue 25 item 3, "Start fast"); never a test. PostgreSQL
 * only (WAYBILL_BENCH_DATABASE_URL; a throwaway schema): a backlog of WAYBILL_BENCH_START_BACKLOG
 * events (default 1,000) waits for one endpoint on a receiver on 127.0.0.1, then the real command
 * (`node src/main.ts worker`, and `serve`) is spawned and timed from the spawn to the first request
 * at the receiver. The same for graphile-worker (its own process, its jobs waiting, the same
 * receiver). WAYBILL_BENCH_START_RUNS runs of each (default 5), taken in turn; medians printed.
 *
 * `node bench/start.ts` runs it alone (`npm run bench:start`); bench/webhooks.ts may call
 * measureStart. Each run stops its process (SIGTERM) once the first request is in and cancels what
 * is left: the next run starts on a backlog of the same size, for an endpoint of its own.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type SqlBool, sql } from 'kysely';
import type { AppContext } from '../src/context.ts';
import { cancelQueued } from '../src/delivery/lifecycle.ts';
import {
  addEndpoint,
  BENCH_SECRET_KEY,
  type CountingReceiver,
  countingReceiver,
  insertEvents,
  median,
  newTenant,
  openBenchContext,
  throwawaySchema,
} from './fixtures.ts';
import { peerMessages } from './message.ts';
import { ensureDatabase } from './peers/database.ts';
import {
  ensurePeersInstalled,
  type GraphileWorkerModule,
  type GraphileWorkerUtils,
  importPeer,
  type PeerPgModule,
  type PgPool,
} from './peers/install.ts';

/** The command timed: this checkout's, or another's (WAYBILL_BENCH_START_MAIN, to compare versions). */
const MAIN =
  process.env.WAYBILL_BENCH_START_MAIN ?? fileURLToPath(new URL('../src/main.ts', import.meta.url));
const GRAPHILE_PROCESS = fileURLToPath(new URL('./peers/graphile-start-process.ts', import.meta.url));
/** graphile-worker as bench/webhooks.ts runs it. */
const GRAPHILE_CONCURRENCY = 64;
const GRAPHILE_LOCAL_QUEUE = 500;
/** A start that has not delivered by then has failed. */
const FIRST_DELIVERY_LIMIT_MS = 60_000;

export type StartCommand = 'worker' | 'serve';

export interface StartOptions {
  /** PostgreSQL, where Waybill gets a throwaway schema. */
  databaseUrl: string;
  /** PostgreSQL for graphile-worker (a throwaway schema too); null leaves it out. */
  peersDatabaseUrl?: string | null;
  runs?: number;
  backlog?: number;
  commands?: readonly StartCommand[];
  /** Where the result lines go (default: console.log). */
  print?: (line: string) => void;
}

export interface StartFigures {
  /** Seconds from spawn to the first request at the receiver, one per run, by command. */
  waybill: Partial<Record<StartCommand, number[]>>;
  /** The same for graphile-worker, or null when it was left out (`note` says why). */
  graphile: number[] | null;
  note: string | null;
  lines: string[];
}

/** A process being timed: its first request's arrival, and a way to stop it. */
interface Started {
  child: ChildProcess;
  spawnedAt: number;
  firstArrival: Promise<number>;
  output: () => string;
}

function compileCacheSettings(): Record<string, string> {
  return Object.fromEntries(
    ['NODE_COMPILE_CACHE', 'NODE_DISABLE_COMPILE_CACHE'].flatMap((name) => {
      const value = process.env[name];
      return value === undefined ? [] : [[name, value]];
    }),
  );
}

function spawnTimed(receiver: CountingReceiver, args: string[], env: Record<string, string>): Started {
  let output = '';
  const firstArrival = receiver.nextArrival();
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, args, {
    // The compile cache's settings go through (NODE_DISABLE_COMPILE_CACHE=1: a first start's figure).
    env: { PATH: process.env.PATH ?? '', ...compileCacheSettings(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code} first:\n${output}`))),
  );
  const late = new Promise<never>((_, reject) =>
    setTimeout(
      () => reject(new Error(`no delivery within ${FIRST_DELIVERY_LIMIT_MS} ms:\n${output}`)),
      FIRST_DELIVERY_LIMIT_MS,
    ).unref(),
  );
  return {
    child,
    spawnedAt,
    firstArrival: Promise.race([firstArrival, exited, late]),
    output: () => output,
  };
}

/** Stops the process (SIGTERM; SIGKILL if it hangs) and waits for its exit. */
async function stop(started: Started): Promise<void> {
  if (started.child.exitCode !== null || started.child.signalCode !== null) return;
  const exited = new Promise((resolve) => started.child.once('exit', resolve));
  started.child.kill('SIGTERM');
  const killer = setTimeout(() => started.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(killer);
}

/** Seconds from spawning `args` to the first request at the receiver; the process is stopped then. */
async function timeRun(
  receiver: CountingReceiver,
  args: string[],
  env: Record<string, string>,
): Promise<number> {
  const started = spawnTimed(receiver, args, env);
  try {
    const arrival = await started.firstArrival;
    return (arrival - started.spawnedAt) / 1000;
  } finally {
    await stop(started);
  }
}

/** graphile-worker's schema, migrated, and a way to queue a backlog in it. */
interface GraphileQueue {
  url: string;
  schema: string;
  queue(count: number): Promise<void>;
  /** Removes the jobs a run left waiting. */
  clear(): Promise<void>;
  close(): Promise<void>;
}

async function graphileQueue(url: string): Promise<GraphileQueue> {
  ensurePeersInstalled();
  await ensureDatabase(url);
  const worker = await importPeer<GraphileWorkerModule>('graphile-worker');
  const { default: peerPg } = await importPeer<PeerPgModule>('pg');
  const schema = `bench_gws_${Math.random().toString(36).slice(2, 10)}`;
  const pool: PgPool = new peerPg.Pool({ connectionString: url, max: 4 });
  // graphile-worker checks that the pool and its clients have error handlers.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const logger = new worker.Logger(() => () => {});
  const utils: GraphileWorkerUtils = await worker.makeWorkerUtils({
    pgPool: pool,
    logger,
    preset: { worker: { schema } },
  });
  await utils.migrate();
  return {
    url,
    schema,
    async queue(count) {
      const messages = peerMessages(count, 'ten_start');
      for (let i = 0; i < messages.length; i += 1000) {
        await utils.addJobs(
          messages.slice(i, i + 1000).map((message) => ({ identifier: 'deliver', payload: message })),
        );
      }
    },
    async clear() {
      await pool.query(`DELETE FROM ${schema}._private_jobs`);
    },
    async close() {
      await utils.release();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await pool.end();
    },
  };
}

/** Queues `count` events for a new endpoint of a new company on the receiver. */
async function queueWaybill(ctx: AppContext, receiver: CountingReceiver, count: number): Promise<void> {
  const tenantId = await newTenant(ctx);
  await addEndpoint(ctx, tenantId, receiver.url);
  await insertEvents(ctx, tenantId, count, 500);
}

/** Cancels what a run left waiting (queued rows leave the queue with it: migration 0080). */
async function clearWaybill(ctx: AppContext): Promise<void> {
  await cancelQueued(ctx.db, sql<SqlBool>`true`, ctx.clock.now());
}

const seconds = (values: readonly number[]) => values.map((v) => v.toFixed(2)).join(', ');

export async function measureStart(options: StartOptions): Promise<StartFigures> {
  const runs = Math.max(1, options.runs ?? 5);
  const backlog = options.backlog ?? 1000;
  const commands = options.commands ?? ['worker', 'serve'];
  const print = options.print ?? ((line: string) => console.log(line));
  const schema = await throwawaySchema(options.databaseUrl, 'bench_start');
  const receiver = await countingReceiver();
  const { ctx, database } = await openBenchContext(options.databaseUrl, schema.name);
  let graphile: GraphileQueue | null = null;
  let note: string | null = null;
  const peersUrl = options.peersDatabaseUrl === undefined ? options.databaseUrl : options.peersDatabaseUrl;
  if (peersUrl === null) note = 'graphile-worker left out';
  else {
    try {
      graphile = await graphileQueue(peersUrl);
    } catch (error) {
      note = `graphile-worker left out (${String(error).split('\n')[0]})`;
    }
  }
  const env = (command: StartCommand): Record<string, string> => ({
    WAYBILL_DATABASE_URL: schema.url,
    WAYBILL_SECRET_KEY: BENCH_SECRET_KEY,
    WAYBILL_DEMO: '0',
    WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
    WAYBILL_LOG_LEVEL: 'warn',
    ...(command === 'serve' ? { PORT: '0' } : {}),
  });
  const figures: StartFigures = { waybill: {}, graphile: graphile ? [] : null, note, lines: [] };
  try {
    // In turn, run by run: the machine's load at any moment weighs on every side alike.
    for (let run = 0; run < runs; run++) {
      for (const command of commands) {
        await queueWaybill(ctx, receiver, backlog);
        const taken = await timeRun(receiver, [MAIN, command], env(command));
        await clearWaybill(ctx);
        figures.waybill[command] = [...(figures.waybill[command] ?? []), taken];
      }
      if (graphile) {
        await graphile.queue(backlog);
        const taken = await timeRun(
          receiver,
          [
            GRAPHILE_PROCESS,
            graphile.url,
            graphile.schema,
            receiver.url,
            String(GRAPHILE_CONCURRENCY),
            String(GRAPHILE_LOCAL_QUEUE),
          ],
          {},
        );
        await graphile.clear();
        figures.graphile?.push(taken);
      }
    }
  } finally {
    await receiver.close();
    await database.close();
    await graphile?.close();
    await schema.drop();
  }
  const peer = figures.graphile
    ? `graphile-worker ${median(figures.graphile).toFixed(2)} s (runs ${seconds(figures.graphile)})`
    : note;
  for (const command of commands) {
    const taken = figures.waybill[command] ?? [];
    figures.lines.push(
      `[postgresql] (f) start: first delivery ${median(taken).toFixed(2)} s after \`waybill ${command}\` starts (median of ${runs}; runs ${seconds(taken)}; ${backlog} events waiting; target < 1 s), ${peer}`,
    );
  }
  for (const line of figures.lines) print(line);
  return figures;
}

if (import.meta.main) {
  const url = process.env.WAYBILL_BENCH_DATABASE_URL;
  if (!url) {
    console.log('[pglite] (f) start: measured on PostgreSQL only; set WAYBILL_BENCH_DATABASE_URL');
  } else {
    await measureStart({
      databaseUrl: url,
      peersDatabaseUrl:
        process.env.WAYBILL_BENCH_PEERS === '0'
          ? null
          : (process.env.WAYBILL_BENCH_PEERS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench'),
      runs: Number(process.env.WAYBILL_BENCH_START_RUNS ?? 5),
      backlog: Number(process.env.WAYBILL_BENCH_START_BACKLOG ?? 1000),
    });
  }
}

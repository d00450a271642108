import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { type Config, loadConfig } from './config.ts';
import type { AppContext } from './context.ts';
import { type DatabaseHandle, openDatabase } from './db/database.ts';
import { type DistributionOutcome, distributeTables } from './db/distribute.ts';
import { migrateToLatest } from './db/migrate.ts';
import { describeDatabase, untilDatabaseAnswers } from './db/wait.ts';
import { systemClock } from './lib/clock.ts';
import { holdProcess, type Lifetime, within } from './lifetime.ts';
import type { OperationsListener } from './modules/operations/listener.ts';
import type { Workers } from './worker.ts';

// The application's modules (about 125 MB of memory) are imported only once the database is open.
// On the embedded engine, PostgreSQL's start has V8 compile one WebAssembly function with about
// 600 MB of compiler memory, the process's peak (decision 0002); without them it is 40 MB lower.

/**
 * How long a stop may take beyond WAYBILL_SHUTDOWN_DELAY_SECONDS before the process gives up and
 * exits 1: the worker's requests in flight (10 s deadline), requests waiting on a database that
 * went away (30 s query limit), and closing the connections.
 */
const STOP_BOUND_MS = 60_000;
/** Closing the pool waits for the connections in use; with PostgreSQL away it is not waited for long. */
const CLOSE_DATABASE_MS = 5_000;
/**
 * `serve` on PostgreSQL loads the API's modules once the worker's first claim is answered, or after
 * this long (the database or the receivers may be slow; the API listens all the same). Loading
 * them holds the event loop for about half a second with no turn for I/O, which the first
 * deliveries would otherwise wait for (issue 25 item 3).
 */
const WORKER_HEAD_START_MS = 500;

/** The long-running roles: `serve` (API and pages, with or without the worker) and `worker`. */
export interface Roles {
  api: boolean;
  worker: boolean;
}

/**
 * The migrations, with a line saying which were applied; then, on Citus, the tables made reference
 * or distributed tables (decision 0073), with a line saying which.
 */
export async function migrate(database: DatabaseHandle, log: Logger): Promise<DistributionOutcome | null> {
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) log.info({ applied }, 'migrations applied');
  const distribution = await distributeTables(database.db);
  // The delivery engine claims and records company by company there (decision 0074).
  database.distributed = distribution !== null;
  if (distribution && (distribution.done.length > 0 || distribution.delegated.length > 0))
    log.info(
      { done: distribution.done, already: distribution.already, delegated: distribution.delegated },
      'tables distributed on Citus',
    );
  return distribution;
}

export async function printDemo(ctx: AppContext): Promise<void> {
  const { demoReminder, seedDemo } = await import('./seed.ts');
  const seed = await seedDemo(ctx);
  if (seed) {
    console.log(['Demo data created. Sign in with:', ...seed.lines].join('\n'));
    return;
  }
  // Every start says how to sign in, not only the first (issue 53 item 9).
  const again = await demoReminder(ctx);
  if (again) console.log(['Demo data (from an earlier start). Sign in with:', ...again].join('\n'));
}

/**
 * Runs a role until a signal stops it. On PostgreSQL it starts without its database: it listens
 * at once (the public port and the metrics listener, /readyz at 503 `starting`), waits for the
 * database as long as it takes, migrates, and only then opens the API and starts the worker.
 * The waiting begins while the modules load, and the worker claims as soon as the database is
 * migrated, before `serve` loads the API (issue 25 item 3: first delivery under a second).
 * The embedded engine lives in this process and cannot be away: it migrates before listening.
 */
export async function runRoles(given: Readonly<Config>, log: Logger, roles: Roles): Promise<void> {
  const config = roles.api && given.port === 0 ? loadConfig(undefined, await freePort(given.host)) : given;
  const lifetime = holdProcess(log, { shutdownBoundMs: config.shutdownDelayMs + STOP_BOUND_MS });
  const database = await openDatabase(config, { log });
  const embedded = database.engine === 'pglite';
  if (embedded) await migrate(database, log);
  // PostgreSQL is waited for and migrated from now on, while the modules load (issue 25 item 3).
  const migrated = embedded ? Promise.resolve(true) : untilMigrated(database, config, log, lifetime);
  // Awaited below, once the modules are loaded; until then its failure is not an unhandled one.
  migrated.catch(() => {});
  // A worker-only process loads the services alone: no Fastify, routes or pages to import.
  const [{ buildContext }, engine] = await Promise.all([
    import('./services.ts'),
    roles.worker ? import('./worker.ts') : null,
  ]);
  const ctx = buildContext({ config, database, clock: systemClock, logger: log });
  ctx.health.starting = true;
  if (embedded && config.demo) await printDemo(ctx);
  // The embedded engine's first runs of the delivery statements are paid while the API loads, not
  // by the first requests and deliveries (issue 34 item 4; delivery/warm-up.ts).
  const warmed = embedded && roles.worker ? warmUp(ctx) : Promise.resolve();
  let app: FastifyInstance | null = null;
  // app.close() lets requests in flight finish, then waits for their connections to end: answers
  // given while stopping close theirs, or a client's keep-alive would hold the exit for its timeout.
  let closing = false;
  let workers: Workers | null = null;
  let operations: OperationsListener | null = null;
  /** The database answers and is migrated: the worker starts. */
  const startWorker = () => {
    workers = engine ? engine.startWorkers(ctx) : null;
  };
  lifetime.onStop(async () => {
    // Not ready at once; stop taking work and let requests in flight finish; then let go of the
    // database. A process still waiting for its database has nothing to drain.
    const draining = roles.api && !ctx.health.starting;
    await Promise.all([announceShutdown(ctx, draining, lifetime), workers?.stop()]);
    closing = true;
    await app?.close();
    await operations?.close();
    // The embedded engine writes its files as it closes: that is waited for, whatever it takes.
    if (embedded) await ctx.database.close();
    else if (!(await within(CLOSE_DATABASE_MS, ctx.database.close())))
      log.warn('database connections not closed in time; exiting without them');
  });
  // On PostgreSQL the worker starts as soon as the database is migrated, and `serve` loads the
  // API's modules after its first claim (WORKER_HEAD_START_MS).
  const opened = embedded
    ? Promise.resolve(true)
    : migrated.then(async (done) => {
        if (!done || lifetime.stopping.aborted) return false;
        // The demo is a convenience: its failure (the database going away again) does not stop the start.
        if (config.demo)
          await printDemo(ctx).catch((err: unknown) => ctx.log.error({ err }, 'the demo was not seeded'));
        if (lifetime.stopping.aborted) return false;
        startWorker();
        return true;
      });
  opened.catch(() => {});

  if (roles.api) {
    if (engine && !embedded)
      await within(
        WORKER_HEAD_START_MS,
        opened.then(() => workers?.started),
      );
    app = await (await import('./app.ts')).buildApp(ctx);
    app.addHook('onSend', async (_request, reply) => {
      if (closing) reply.header('connection', 'close');
    });
  }
  if (embedded) {
    await warmed;
    startWorker();
    ctx.health.starting = false;
  }
  const url = app ? await listen(app, config) : null;
  operations = await startOperations(ctx);
  if (url) console.log(`Waybill listening on ${url}`);
  // Agents connect here (MCP over Streamable HTTP, authorized by Waybill's own OAuth).
  if (url) console.log(`MCP server for AI agents: ${config.baseUrl}/mcp`);
  if (!(await opened)) return;
  // Migrated, and the API listening: ready, and the API opens.
  ctx.health.starting = false;
  if (!url) console.log('Waybill worker running');
  if (embedded) releaseStartupMemory();
  if (url && config.demo) console.log(`Demo sign-ins: ${url}/signin (see README.md for the accounts)`);
}

/** The delivery engine's statements run once before serving; a failure only loses the head start. */
async function warmUp(ctx: AppContext): Promise<void> {
  try {
    const started = performance.now();
    const { warmDeliveryStatements } = await import('./delivery/warm-up.ts');
    await warmDeliveryStatements(ctx);
    ctx.log.debug({ ms: Math.round(performance.now() - started) }, 'delivery statements warmed');
  } catch (err) {
    ctx.log.warn({ err }, 'warming the delivery statements failed');
  }
}

/** Migrates once the database answers, however long that takes. False when a signal came first. */
async function untilMigrated(
  database: DatabaseHandle,
  config: Readonly<Config>,
  log: Logger,
  lifetime: Lifetime,
): Promise<boolean> {
  const done = await untilDatabaseAnswers(
    async () => {
      await migrate(database, log);
      return true;
    },
    { log, where: describeDatabase(config.database), signal: lifetime.stopping },
  );
  return done === true;
}

async function listen(app: FastifyInstance, config: Readonly<Config>): Promise<string> {
  const address = await app.listen({ port: config.port, host: config.host });
  const url = new URL(address);
  if (url.hostname === '127.0.0.1' || url.hostname === '[::1]') url.hostname = 'localhost';
  return url.origin;
}

/**
 * Readiness first: from now on /readyz answers 503, and the process keeps serving for
 * WAYBILL_SHUTDOWN_DELAY_SECONDS so that load balancers see it and stop sending.
 */
async function announceShutdown(ctx: AppContext, servesTraffic: boolean, lifetime: Lifetime): Promise<void> {
  ctx.health.shuttingDown = true;
  // A worker-only process, or one still starting, takes no traffic: nothing to wait for.
  const delayMs = servesTraffic ? ctx.config.shutdownDelayMs : 0;
  console.log(
    `Waybill stopping: /readyz answers 503${delayMs > 0 ? `, draining in ${delayMs / 1000} s` : ''}`,
  );
  if (delayMs > 0) await sleep(delayMs, undefined, { signal: lifetime.hurry }).catch(() => {});
}

/** The metrics listener (WAYBILL_METRICS_PORT), when configured. */
async function startOperations(ctx: AppContext): Promise<OperationsListener | null> {
  const port = ctx.config.metricsPort;
  if (port === null) return null;
  const { startOperationsListener } = await import('./modules/operations/listener.ts');
  const listener = await startOperationsListener(ctx, { port, host: ctx.config.host });
  console.log(`Waybill metrics on ${listener.url}/metrics`);
  return listener;
}

/** A port the system has free now: PORT=0 asks for one, and the configuration must name it. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A second whose event loop was busy less than this is a quiet one. */
const QUIET_UTILIZATION = 0.1;

/**
 * A start leaves garbage (the modules' loading, the migrations' check, the demo, PGlite's start)
 * that V8 gives back only when it next collects fully, which an idle process may not do for a long
 * time: one full collection once started gives back 30 to 80 MB (`npm run bench:memory`'s idle
 * RSS: 331 and 389 MB with it, 414 and 418 without). It holds the event loop for 100 to 200 ms, so
 * it waits for the first quiet second: made one second after listening, it came under the first
 * second's load (issue 34 item 4). A process busy from its start collects as it goes.
 */
function releaseStartupMemory(): void {
  try {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    let last = performance.eventLoopUtilization();
    const timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      if (busy >= QUIET_UTILIZATION) return;
      clearInterval(timer);
      collect();
    }, 1000);
    timer.unref();
  } catch {
    // Without it the memory still goes back, whenever V8 next collects.
  }
}

#!/usr/bin/env node
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pino from 'pino';
import { type Config, ConfigError, loadConfig } from './config.ts';
import type { AppContext } from './context.ts';
import { openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { systemClock } from './lib/clock.ts';
import type { OperationsListener } from './modules/operations/listener.ts';

// The application's modules (about 125 MB of memory) are imported only once the database is open.
// On the embedded engine, PostgreSQL's start has V8 compile one WebAssembly function with about
// 600 MB of compiler memory, the process's peak (decision 0002); without them it is 40 MB lower.

const USAGE = `Usage: waybill <command>

Commands:
  serve [--no-worker]   API, pages and delivery worker in one process (default)
  worker                the delivery worker alone (PostgreSQL)
  migrate               apply database migrations and exit
  seed                  add the demo data to an empty database and exit
  listen                receive test webhooks on this machine (waybill listen --help)

Configuration comes from the environment; see README.md.`;

async function open(config: Readonly<Config>) {
  const logger = pino({ level: config.logLevel });
  const database = await openDatabase(config, { log: logger });
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const { buildContext } = await import('./app.ts');
  const ctx = buildContext({ config, database, clock: systemClock, logger });
  return { ctx, logger };
}

/** Cut short by a second signal: an operator who presses Ctrl-C twice means now. */
const skipDelay = new AbortController();

function onShutdown(stop: () => Promise<void>): void {
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) {
        skipDelay.abort();
        return;
      }
      stopping = true;
      stop().then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(err);
          process.exit(1);
        },
      );
    });
  }
}

/**
 * Readiness first: from now on /readyz answers 503, and the process keeps serving for
 * WAYBILL_SHUTDOWN_DELAY_SECONDS so that load balancers see it and stop sending.
 */
async function announceShutdown(ctx: AppContext, servesTraffic: boolean): Promise<void> {
  ctx.health.shuttingDown = true;
  // A worker-only process takes no traffic: nothing to wait for.
  const delayMs = servesTraffic ? ctx.config.shutdownDelayMs : 0;
  console.log(
    `Waybill stopping: /readyz answers 503${delayMs > 0 ? `, draining in ${delayMs / 1000} s` : ''}`,
  );
  if (delayMs > 0) await sleep(delayMs, undefined, { signal: skipDelay.signal }).catch(() => {});
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

async function printDemo(ctx: AppContext): Promise<void> {
  const { seedDemo } = await import('./seed.ts');
  const seed = await seedDemo(ctx);
  if (seed) console.log(['Demo data created. Sign in with:', ...seed.lines].join('\n'));
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

/**
 * A first start on the embedded database runs initdb in WebAssembly instances of their own, closed
 * once the folder is made; their memory (hundreds of MB) goes back only when V8 collects them,
 * which an idle process may not do for a long time. One full collection once started gives it back.
 */
function releaseStartupMemory(): void {
  try {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    setTimeout(collect, 1000).unref();
  } catch {
    // Without it the memory still goes back, whenever V8 next collects.
  }
}

async function serve(given: Readonly<Config>, withWorker: boolean): Promise<void> {
  const config = given.port === 0 ? loadConfig(undefined, await freePort(given.host)) : given;
  const { ctx } = await open(config);
  if (config.demo) await printDemo(ctx);
  const { buildApp } = await import('./app.ts');
  const app = await buildApp(ctx);
  // app.close() lets requests in flight finish, then waits for their connections to end: answers
  // given while stopping close theirs, or a client's keep-alive would hold the exit for its timeout.
  let stopping = false;
  app.addHook('onSend', async (_request, reply) => {
    if (stopping) reply.header('connection', 'close');
  });
  const address = await app.listen({ port: config.port, host: config.host });
  const url = new URL(address);
  if (url.hostname === '127.0.0.1' || url.hostname === '[::1]') url.hostname = 'localhost';
  const workers = withWorker ? (await import('./worker.ts')).startWorkers(ctx) : null;
  const operations = await startOperations(ctx);
  console.log(`Waybill listening on ${url.origin}`);
  if (ctx.database.engine === 'pglite') releaseStartupMemory();
  if (config.demo) console.log(`Demo sign-ins: ${url.origin}/signin (see README.md for the accounts)`);
  onShutdown(async () => {
    // Not ready at once; stop taking work and let requests in flight finish; then let go of the database.
    await Promise.all([announceShutdown(ctx, true), workers?.stop()]);
    stopping = true;
    await app.close();
    await operations?.close();
    await ctx.database.close();
  });
}

async function main(): Promise<void> {
  // A client command: its own options, no server configuration.
  if (process.argv[2] === 'listen') {
    const args = process.argv.slice(3);
    const { LISTEN_USAGE, listenCommand } = await import('./cli/listen.ts');
    if (args.includes('--help') || args.includes('-h')) console.log(LISTEN_USAGE);
    else await listenCommand(args);
    return;
  }
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { 'no-worker': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
  });
  const command = positionals[0] ?? 'serve';
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return serve(config, !values['no-worker']);
    case 'worker': {
      const { ctx } = await open(config);
      const workers = (await import('./worker.ts')).startWorkers(ctx);
      const operations = await startOperations(ctx);
      console.log('Waybill worker running');
      onShutdown(async () => {
        await Promise.all([announceShutdown(ctx, false), workers.stop()]);
        await operations?.close();
        await ctx.database.close();
      });
      return;
    }
    case 'migrate': {
      const { ctx } = await open(config);
      await ctx.database.close();
      console.log('Migrations are up to date');
      return;
    }
    case 'seed': {
      const { ctx } = await open(config);
      await printDemo(ctx);
      await ctx.database.close();
      return;
    }
    default:
      console.error(`Unknown command "${command}"\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else console.error(error);
  process.exit(1);
});

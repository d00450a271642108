#!/usr/bin/env node
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { buildApp, buildContext } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import type { AppContext } from './context.ts';
import { openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { systemClock } from './lib/clock.ts';
import { seedDemo } from './seed.ts';
import { startWorkers } from './worker.ts';

const USAGE = `Usage: waybill <command>

Commands:
  serve [--no-worker]   API, pages and delivery worker in one process (default)
  worker                the delivery worker alone (PostgreSQL)
  migrate               apply database migrations and exit
  seed                  add the demo data to an empty database and exit

Configuration comes from the environment; see README.md.`;

async function open(config: Readonly<Config>) {
  const logger = pino({ level: config.logLevel });
  const database = await openDatabase(config);
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  const ctx = buildContext({ config, database, clock: systemClock, logger });
  return { ctx, logger };
}

function onShutdown(stop: () => Promise<void>): void {
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
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

async function printDemo(ctx: AppContext): Promise<void> {
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

async function serve(given: Readonly<Config>, withWorker: boolean): Promise<void> {
  const config = given.port === 0 ? loadConfig(undefined, await freePort(given.host)) : given;
  const { ctx } = await open(config);
  if (config.demo) await printDemo(ctx);
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
  const workers = withWorker ? startWorkers(ctx) : null;
  console.log(`Waybill listening on ${url.origin}`);
  if (config.demo) console.log(`Demo sign-ins: ${url.origin}/signin (see README.md for the accounts)`);
  onShutdown(async () => {
    // Stop taking work, let requests in flight finish, then let go of the database.
    await workers?.stop();
    stopping = true;
    await app.close();
    await ctx.database.close();
  });
}

async function main(): Promise<void> {
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
      const workers = startWorkers(ctx);
      console.log('Waybill worker running');
      onShutdown(async () => {
        await workers.stop();
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

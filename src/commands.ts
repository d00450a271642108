import { parseArgs } from 'node:util';
import pino, { type Logger } from 'pino';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/database.ts';
import { DistributionRefused, describeDistribution } from './db/distribute.ts';
import { DatabaseUnreachable, describeDatabase, untilDatabaseAnswers } from './db/wait.ts';
import { systemClock } from './lib/clock.ts';
import { logFormatFor, prettyDestination } from './lib/log-format.ts';
import { migrate, printDemo, runRoles } from './roles.ts';

const USAGE = `Usage: waybill <command>

Commands:
  serve [--no-worker]   API, pages and delivery worker in one process (default)
  worker                the delivery worker alone (PostgreSQL)
  migrate [--wait <s>]  apply database migrations and exit
  seed [--wait <s>]     add the demo data to an empty database and exit
  listen                receive test webhooks on this machine (waybill listen --help)
  login                 sign in for the app commands (waybill login --help)
  app                   an app's configuration as code: deploy, versions, release (waybill app --help)

serve and worker wait for an unreachable database as long as it takes; migrate and seed wait
--wait seconds (default 60), then exit 1.

Configuration comes from the environment; see README.md.`;

const DEFAULT_WAIT_SECONDS = 60;

/**
 * The one-shot commands (migrate, seed): they wait for an unreachable database a bounded time,
 * then fail with a line saying so, for a deploy script or an init container to act on.
 */
async function oneShot(config: Readonly<Config>, log: Logger, waitSeconds: number, seed: boolean) {
  const database = await openDatabase(config, { log });
  try {
    const distribution = await untilDatabaseAnswers(() => migrate(database, log), {
      log,
      where: describeDatabase(config.database),
      giveUpAfterMs: waitSeconds * 1000,
    });
    if (distribution) for (const line of describeDistribution(distribution)) console.log(line);
    if (seed) {
      const { buildContext } = await import('./services.ts');
      await printDemo(buildContext({ config, database, clock: systemClock, logger: log }));
    } else console.log('Migrations are up to date');
  } finally {
    await database.close();
  }
}

function waitSecondsOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_WAIT_SECONDS;
  const seconds = Number(text);
  if (!/^\d+$/.test(text) || seconds > 86_400)
    throw new ConfigError([`--wait must be 0 to 86400 seconds (got "${text}")`]);
  return seconds;
}

let logger: Logger | null = null;

async function main(): Promise<void> {
  // A client command: its own options, no server configuration.
  if (process.argv[2] === 'listen') {
    const args = process.argv.slice(3);
    const { LISTEN_USAGE, listenCommand } = await import('./cli/listen.ts');
    if (args.includes('--help') || args.includes('-h')) console.log(LISTEN_USAGE);
    else await listenCommand(args);
    return;
  }
  if (process.argv[2] === 'login' || process.argv[2] === 'app') {
    const args = process.argv.slice(3);
    const { appCommand, loginCommand, runClientCommand } = await import('./cli/app.ts');
    const command = process.argv[2] === 'login' ? loginCommand : appCommand;
    return runClientCommand(() => command(args));
  }
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      'no-worker': { type: 'boolean', default: false },
      wait: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0] ?? 'serve';
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const config = loadConfig();
  // JSON for machines; lines for people on a terminal, or when asked (WAYBILL_LOG_FORMAT).
  const log =
    logFormatFor(config.logFormat) === 'pretty'
      ? pino({ level: config.logLevel }, prettyDestination())
      : pino({ level: config.logLevel });
  logger = log;
  switch (command) {
    case 'serve':
      return runRoles(config, log, { api: true, worker: !values['no-worker'] });
    case 'worker':
      return runRoles(config, log, { api: false, worker: true });
    case 'migrate':
    case 'seed':
      return oneShot(config, log, waitSecondsOf(values.wait), command === 'seed');
    default:
      console.error(`Unknown command "${command}"\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main().catch((error: unknown) => {
  // A configuration the command cannot run with, or a start that failed: a line that says why, exit 1.
  if (
    error instanceof ConfigError ||
    error instanceof DatabaseUnreachable ||
    error instanceof DistributionRefused
  )
    console.error(error.message);
  else if (logger) logger.fatal({ err: error }, 'waybill failed; exiting');
  else console.error(error);
  process.exit(1);
});

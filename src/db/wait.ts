import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config.ts';
import { isDatabaseUnavailable } from './database.ts';

const FIRST_WAIT_MS = 500;
const MAX_WAIT_MS = 5_000;

export interface WaitOptions {
  log: { info(object: object, message: string): void; warn(object: object, message: string): void };
  /** Where the database is, for the log lines (describeDatabase: never the password). */
  where: string;
  /** Aborted by a signal: waiting ends, and `untilDatabaseAnswers` resolves null. */
  signal?: AbortSignal;
  /** The one-shot commands give up after this long (DatabaseUnreachable); the services never do. */
  giveUpAfterMs?: number;
}

/** The database did not answer within a one-shot command's wait. */
export class DatabaseUnreachable extends Error {
  constructor(where: string, waitedMs: number, cause: unknown) {
    const why = briefly(cause);
    super(
      `The database at ${where} did not answer within ${Math.round(waitedMs / 1000)} s (${why.code ?? why.message})`,
      { cause },
    );
    this.name = 'DatabaseUnreachable';
  }
}

/** host:port/database of a PostgreSQL URL, without the user or the password; the embedded engine's folder. */
export function describeDatabase(database: Config['database']): string {
  if (database.kind === 'pglite') return database.dataDir ?? 'memory';
  const url = new URL(database.url);
  // A Unix socket is named by the `host` parameter (postgres:///waybill?host=/var/run/postgresql).
  const host = url.hostname || url.searchParams.get('host') || 'localhost';
  return `${host}:${url.port || '5432'}${url.pathname}`;
}

/**
 * Runs `step` (applying the migrations) until it gets through, waiting with a growing, capped and
 * jittered backoff while the database cannot be reached: down, restarting, "starting up" (57P03),
 * or a network away. An error of any other kind (a migration that fails, a wrong password) is
 * thrown: waiting would not mend it.
 */
export async function untilDatabaseAnswers<T>(
  step: () => Promise<T>,
  options: WaitOptions,
): Promise<T | null> {
  const started = Date.now();
  let waitMs = FIRST_WAIT_MS;
  for (let attempt = 1; ; attempt++) {
    if (options.signal?.aborted) return null;
    try {
      const result = await step();
      if (attempt > 1)
        options.log.info({ database: options.where, attempts: attempt }, 'the database answers');
      return result;
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      const retryInMs = Math.round(waitMs * (0.8 + Math.random() * 0.4));
      const waitedMs = Date.now() - started;
      if (options.giveUpAfterMs !== undefined && waitedMs + retryInMs > options.giveUpAfterMs)
        throw new DatabaseUnreachable(options.where, Math.max(waitedMs, options.giveUpAfterMs), err);
      options.log.warn(
        { database: options.where, attempt, retryInMs, error: briefly(err) },
        'waiting for the database',
      );
      const stopped = await sleep(retryInMs, false, options.signal ? { signal: options.signal } : {}).catch(
        () => true,
      );
      if (stopped) return null;
      waitMs = Math.min(waitMs * 2, MAX_WAIT_MS);
    }
  }
}

/** The code and message of a connection error, without its stack or the driver's client object. */
function briefly(err: unknown): { code?: string; message: string } {
  const { code, message } = err as { code?: unknown; message?: unknown };
  return {
    ...(typeof code === 'string' ? { code } : {}),
    message: typeof message === 'string' ? message : String(err),
  };
}

import { createHash } from 'node:crypto';
import type { PGlite } from '@electric-sql/pglite';
import { type CompiledQuery, Kysely } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import { ScrubbingPostgresDialect, SerializedPGliteDialect } from './drivers.ts';
import { type Listener, ListenSubscription } from './listen.ts';
import { isDeadlock } from './outage.ts';
import type { Database } from './schema.ts';
import { scrubDatabaseError } from './scrub.ts';

/** Whether the database is away now: what services ask of it besides their statements. */
export { isDatabaseUnavailable, isDeadlock } from './outage.ts';

// COUNT(*) and other int8 values as numbers; ours never pass 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  engine: 'pglite' | 'postgres';
  /** Subscribes to a notification channel (LISTEN); returns the unsubscribe function. */
  listen(channel: string, listener: Listener): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /**
   * Runs one statement of a hot path as a named prepared statement on PostgreSQL (parsed and
   * planned once per connection instead of on every call); on PGlite, an ordinary query.
   */
  prepared<Row>(query: CompiledQuery): Promise<Row[]>;
  /** The raw PGlite instance, for dumps in tests. */
  pglite?: PGlite;
  /**
   * On a Citus coordinator with the tables distributed (set by the distribution step): the claim
   * and the record run tenant by tenant, each statement in one shard (decision 0074).
   */
  distributed?: boolean;
}

export interface DatabaseOptions {
  /** PostgreSQL only: a schema to work in (tests give each file its own). */
  schema?: string;
  /** PGlite only: start from a dump instead of an empty cluster. */
  loadDataDir?: Blob;
  poolSize?: number;
  /** Where lost connections are reported (they are not errors of any request). */
  log?: { info(object: object, message: string): void; warn(object: object, message: string): void };
}

export async function openDatabase(
  config: Pick<Config, 'database'>,
  options: DatabaseOptions = {},
): Promise<DatabaseHandle> {
  if (config.database.kind === 'postgres') return openPostgres(config.database.url, options);
  return openPGlite(config.database.dataDir, options);
}

async function openPGlite(dataDir: string | null, options: DatabaseOptions): Promise<DatabaseHandle> {
  // Imported here: a process on PostgreSQL never loads the embedded engine.
  const [{ PGlite }, { initializeInChild, PGLITE_OPTIONS }, { pgliteModule }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('./pglite.ts'),
    import('./pglite-module.ts'),
  ]);
  if (dataDir !== null && !options.loadDataDir) {
    const started = performance.now();
    const outcome = await initializeInChild(dataDir);
    const ms = Math.round(performance.now() - started);
    if (outcome === 'created')
      options.log?.info({ dataDir, ms }, 'cluster created by initdb in a child process');
    else if (outcome !== 'present')
      options.log?.warn({ dataDir, why: outcome.failed }, 'cluster to be created in this process');
  }
  // After initdb's child has exited: the two peaks (each about 600 MB) never add up.
  const pgliteWasmModule = await pgliteModule();
  const pglite = await PGlite.create(dataDir ?? undefined, {
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    ...(pgliteWasmModule ? { pgliteWasmModule } : {}),
    ...PGLITE_OPTIONS,
  });
  const db = new Kysely<Database>({ dialect: new SerializedPGliteDialect({ pglite }) });
  return {
    async prepared<Row>(query: CompiledQuery) {
      return (await db.executeQuery<Row>(query)).rows;
    },
    db,
    engine: 'pglite',
    pglite,
    async listen(channel, listener) {
      const stop = await pglite.listen(channel, listener);
      return async () => stop();
    },
    async close() {
      await db.destroy();
    },
  };
}

/** Bounds on waiting for PostgreSQL, so that an outage answers 503 instead of hanging a request. */
const CONNECT_TIMEOUT_MS = 5_000;
/** How many times a prepared statement meets a deadlock before it fails. */
const DEADLOCK_TRIES = 3;
const QUERY_TIMEOUT_MS = 30_000;
async function openPostgres(url: string, options: DatabaseOptions): Promise<DatabaseHandle> {
  const connection = {
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    keepAlive: true,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
  const pool = new pg.Pool({ ...connection, max: options.poolSize ?? 10 });
  // An idle connection that dies (a restart, a failover, a cut network) emits 'error' on the pool;
  // unheard, that event would end the process. The pool drops the client and opens a new one when
  // next asked.
  pool.on('error', (error) =>
    options.log?.warn({ err: lostConnection(error) }, 'idle database connection lost'),
  );
  // A connection lost while checked out emits 'error' on its client, which the pool no longer
  // listens to then; its query fails on its own (and answers 503), so the event is only logged.
  pool.on('connect', (client) => {
    client.on('error', (error) =>
      options.log?.warn({ err: lostConnection(error) }, 'database connection lost'),
    );
  });
  const db = new Kysely<Database>({ dialect: new ScrubbingPostgresDialect({ pool }) });
  const subscriptions = new Set<ListenSubscription>();
  return {
    async prepared<Row>(query: CompiledQuery) {
      const name = `w_${createHash('sha1').update(query.sql).digest('hex').slice(0, 16)}`;
      for (let attempt = 1; ; attempt++) {
        try {
          const result = await pool.query({ name, text: query.sql, values: query.parameters as unknown[] });
          return result.rows as Row[];
        } catch (error) {
          // A statement of its own, cancelled to break a deadlock, did nothing: it runs again. On
          // Citus, concurrent writes to a reference table (a token spend) take their locks on
          // every node, and the cluster cancels one of them to end a distributed deadlock.
          if (isDeadlock(error) && attempt < DEADLOCK_TRIES) continue;
          throw scrubDatabaseError(error);
        }
      }
    },
    db,
    engine: 'postgres',
    async listen(channel, listener) {
      const subscription = new ListenSubscription(connection, channel, listener, options.log);
      await subscription.start();
      subscriptions.add(subscription);
      return async () => {
        subscriptions.delete(subscription);
        await subscription.stop();
      };
    },
    async close() {
      await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
      subscriptions.clear();
      await db.destroy();
    },
  };
}

/** The pool hangs the whole driver client on the error it reports (`err.client`): not for the log. */
function lostConnection(error: Error): Error {
  if (!('client' in error)) return error;
  const { client: _client, ...rest } = error as Error & { client: unknown };
  return Object.assign(new Error(error.message), rest, { stack: error.stack });
}

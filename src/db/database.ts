import { createHash } from 'node:crypto';
import type { PGlite } from '@electric-sql/pglite';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PGliteDialect,
  PostgresDialect,
  type TransactionSettings,
} from 'kysely';
import pg from 'pg';
import type { Config } from '../config.ts';
import type { Database } from './schema.ts';

// COUNT(*) and other int8 values as numbers; ours never pass 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Db = Kysely<Database>;

/** Wakes listeners when a transaction that called `pg_notify` commits. */
export type Listener = (payload: string) => void;

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

/**
 * What a failed statement's error may carry of the values it was given, removed before anyone
 * logs it (issue 22 item 1: no personal data in logs). PGlite hangs the statement's bound
 * parameters on its errors (`params`, and `queryOptions`); both engines put the failing row or
 * key in `detail` ("Failing row contains (...)", "Key (...)=(...) already exists"), and a value
 * that does not parse at the end of `message` (`invalid input syntax for type ...: "value"`).
 * The statement's text stays (its values are parameters), and so do the code, the constraint,
 * the table and the column, which say what failed.
 */
export function scrubDatabaseError(error: unknown): unknown {
  if (error === null || typeof error !== 'object') return error;
  const fields = error as Record<string, unknown>;
  for (const name of ['params', 'queryOptions', 'parameters', 'values']) {
    if (name in fields) delete fields[name];
  }
  if (typeof fields.detail === 'string' && fields.detail !== '') fields.detail = '[values not logged]';
  if (error instanceof Error && /: ".*"$/s.test(error.message)) {
    const message = error.message.replace(/: ".*"$/s, ': [value not logged]');
    if (typeof error.stack === 'string') error.stack = error.stack.replace(error.message, message);
    error.message = message;
  }
  return error;
}

const scrubbed = new WeakSet<DatabaseConnection>();

/** Makes a connection's failed statements throw scrubbed errors (patched once per connection). */
function scrubbing(connection: DatabaseConnection): DatabaseConnection {
  if (scrubbed.has(connection)) return connection;
  scrubbed.add(connection);
  const execute = connection.executeQuery.bind(connection);
  connection.executeQuery = async (query) => {
    try {
      return await execute(query);
    } catch (error) {
      throw scrubDatabaseError(error);
    }
  };
  const stream = connection.streamQuery.bind(connection);
  connection.streamQuery = async function* (query, chunkSize) {
    try {
      yield* stream(query, chunkSize);
    } catch (error) {
      throw scrubDatabaseError(error);
    }
  };
  return connection;
}

/** A driver that hands every call to another; the wrappers below change what they need. */
class DelegatingDriver implements Driver {
  protected readonly inner: Driver;

  constructor(inner: Driver) {
    this.inner = inner;
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  acquireConnection(): Promise<DatabaseConnection> {
    return this.inner.acquireConnection();
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(connection);
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** A driver whose connections throw scrubbed errors (scrubDatabaseError), on either engine. */
class ScrubbingDriver extends DelegatingDriver {
  override async acquireConnection(): Promise<DatabaseConnection> {
    return scrubbing(await this.inner.acquireConnection());
  }
}

class ScrubbingPostgresDialect extends PostgresDialect {
  override createDriver(): Driver {
    return new ScrubbingDriver(super.createDriver());
  }
}

/**
 * Kysely's PGlite driver shares one connection between all callers, so a query issued while another
 * caller's transaction is open would run inside it. This mutex hands the connection to one caller at a time.
 */
class SerializedDriver extends DelegatingDriver {
  #queue: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;

  override async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#queue;
    let release!: () => void;
    this.#queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    this.#release = release;
    return this.inner.acquireConnection();
  }

  override async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await this.inner.releaseConnection(connection);
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }
}

export class SerializedPGliteDialect extends PGliteDialect {
  override createDriver(): Driver {
    return new ScrubbingDriver(new SerializedDriver(super.createDriver()));
  }
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
const QUERY_TIMEOUT_MS = 30_000;
/** LISTEN reconnects after a lost connection, waiting longer each time up to this. */
const LISTEN_RETRY_MAX_MS = 10_000;

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '57P01', // admin_shutdown: "terminating connection due to administrator command"
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection ended|not queryable|Cannot use a pool after calling end/i;

/**
 * Whether an error means the database cannot be reached now (an outage, a restart, a failover),
 * as opposed to a statement it refused: the first is answered 503 and retried, the second is a bug
 * or bad data.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth++) {
    const code = String((current as { code?: unknown }).code ?? '');
    if (UNAVAILABLE_CODES.has(code) || code.startsWith('08')) return true;
    const message = String((current as { message?: unknown }).message ?? '');
    if (UNAVAILABLE_MESSAGES.test(message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

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
      try {
        const result = await pool.query({ name, text: query.sql, values: query.parameters as unknown[] });
        return result.rows as Row[];
      } catch (error) {
        throw scrubDatabaseError(error);
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

/**
 * LISTEN on a connection of its own that stays open, re-established after it is lost. Once it is
 * back the listener is called with an empty payload: what was notified meanwhile was missed, so
 * the worker looks for work at once (the poll would find it too, later).
 */
class ListenSubscription {
  #client: pg.Client | null = null;
  #stopped = false;
  #retryMs = 250;
  #timer: NodeJS.Timeout | null = null;

  private readonly connection: pg.ClientConfig;
  private readonly channel: string;
  private readonly listener: Listener;
  private readonly log: DatabaseOptions['log'];

  constructor(connection: pg.ClientConfig, channel: string, listener: Listener, log: DatabaseOptions['log']) {
    this.connection = connection;
    this.channel = channel;
    this.listener = listener;
    this.log = log;
  }

  /**
   * The first connection. If the database is away it is tried again like a lost one, so that a
   * worker that started in an outage's first seconds does not poll only for the rest of its life.
   */
  async start(): Promise<void> {
    try {
      await this.#connect();
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      this.log?.warn({ err: error, channel: this.channel }, 'LISTEN could not connect; retrying');
      this.#scheduleReconnect();
    }
  }

  async #connect(): Promise<void> {
    const client = new pg.Client(this.connection);
    client.on('notification', (message) => {
      if (message.channel === this.channel) this.listener(message.payload ?? '');
    });
    // 'error' and 'end' both mean the connection is gone; 'error' must be heard or it ends the process.
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, null));
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel.replaceAll('"', '')}"`);
    } catch (error) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      throw error;
    }
    if (this.#stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#retryMs = 250;
  }

  #lost(client: pg.Client, error: Error | null): void {
    if (this.#client !== client || this.#stopped) return;
    this.#client = null;
    client.removeAllListeners('end');
    void client.end().catch(() => {});
    this.log?.warn({ err: error, channel: this.channel }, 'LISTEN connection lost; reconnecting');
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#stopped || this.#timer) return;
    const wait = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, LISTEN_RETRY_MAX_MS);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#connect().then(
        () => {
          if (!this.#stopped) this.listener('');
        },
        () => this.#scheduleReconnect(),
      );
    }, wait);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const client = this.#client;
    this.#client = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }
}

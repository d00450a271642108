import { createHash } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
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
}

/**
 * Kysely's PGlite driver shares one connection between all callers, so a query issued while another
 * caller's transaction is open would run inside it. This mutex hands the connection to one caller at a time.
 */
class SerializedDriver implements Driver {
  #queue: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;

  private readonly inner: Driver;

  constructor(inner: Driver) {
    this.inner = inner;
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#queue;
    let release!: () => void;
    this.#queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    this.#release = release;
    return this.inner.acquireConnection();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    await this.inner.releaseConnection(connection);
    const release = this.#release;
    this.#release = undefined;
    release?.();
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

export class SerializedPGliteDialect extends PGliteDialect {
  override createDriver(): Driver {
    return new SerializedDriver(super.createDriver());
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
  const pglite = await PGlite.create(
    dataDir ?? undefined,
    options.loadDataDir ? { loadDataDir: options.loadDataDir } : {},
  );
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

async function openPostgres(url: string, options: DatabaseOptions): Promise<DatabaseHandle> {
  const connection = {
    connectionString: url,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
  const pool = new pg.Pool({ ...connection, max: options.poolSize ?? 10 });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const listeners: pg.Client[] = [];
  return {
    async prepared<Row>(query: CompiledQuery) {
      const name = `w_${createHash('sha1').update(query.sql).digest('hex').slice(0, 16)}`;
      const result = await pool.query({ name, text: query.sql, values: query.parameters as unknown[] });
      return result.rows as Row[];
    },
    db,
    engine: 'postgres',
    async listen(channel, listener) {
      // LISTEN needs a connection of its own that stays open.
      const client = new pg.Client(connection);
      await client.connect();
      client.on('notification', (message) => {
        if (message.channel === channel) listener(message.payload ?? '');
      });
      client.on('error', () => {
        // The poll fallback keeps the worker going; the connection is dropped.
      });
      await client.query(`LISTEN "${channel.replaceAll('"', '')}"`);
      listeners.push(client);
      return async () => {
        listeners.splice(listeners.indexOf(client), 1);
        await client.end().catch(() => {});
      };
    },
    async close() {
      await Promise.all(listeners.splice(0).map((client) => client.end().catch(() => {})));
      await db.destroy();
    },
  };
}

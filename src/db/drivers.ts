import {
  type DatabaseConnection,
  type Driver,
  PGliteDialect,
  PostgresDialect,
  type TransactionSettings,
} from 'kysely';
import { scrubDatabaseError } from './scrub.ts';

// The engines' Kysely drivers, wrapped: failed statements throw scrubbed errors (scrub.ts) on either
// engine, and PGlite's one connection goes to one caller at a time.
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

export class ScrubbingPostgresDialect extends PostgresDialect {
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

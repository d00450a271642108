import pg from 'pg';
import { isDatabaseUnavailable } from './outage.ts';

/** Wakes listeners when a transaction that called `pg_notify` commits. */
export type Listener = (payload: string) => void;

/** Where a lost LISTEN connection is reported (the database's log, DatabaseOptions). */
type ListenLog = { warn(object: object, message: string): void } | undefined;

/** LISTEN reconnects after a lost connection, waiting longer each time up to this. */
const LISTEN_RETRY_MAX_MS = 10_000;

/**
 * LISTEN on a connection of its own that stays open, re-established after it is lost. Once it is
 * back the listener is called with an empty payload: what was notified meanwhile was missed, so
 * the worker looks for work at once (the poll would find it too, later).
 */
export class ListenSubscription {
  #client: pg.Client | null = null;
  #stopped = false;
  #retryMs = 250;
  #timer: NodeJS.Timeout | null = null;

  private readonly connection: pg.ClientConfig;
  private readonly channel: string;
  private readonly listener: Listener;
  private readonly log: ListenLog;

  constructor(connection: pg.ClientConfig, channel: string, listener: Listener, log: ListenLog) {
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

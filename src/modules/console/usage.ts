import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.ts';
import { type Clock, HOUR, SECOND } from '../../lib/clock.ts';

export type UsageMetric = 'api' | 'api_error' | 'token';

/** How long counts wait in memory before they are added to the database. */
export const USAGE_FLUSH_MS = 10 * SECOND;
/** Distinct counters held at most between two flushes; past it a flush starts at once. */
const FLUSH_AT_KEYS = 5_000;
const SEPARATOR = '\u0000';

/**
 * What each app does, counted where it happens (an API call with the app's token, a token grant)
 * in this process's memory, per app, UTC hour, metric and detail, and added to `app_usage` in one
 * statement per flush: a counted request costs a Map update, never a write of its own.
 */
export class AppUsage {
  private pending = new Map<string, number>();
  private flushing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;

  private readonly db: Db;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(db: Db, clock: Clock, log: Logger) {
    this.db = db;
    this.clock = clock;
    this.log = log;
  }

  count(appId: string, metric: UsageMetric, detail = ''): void {
    const hour = Math.floor(this.clock.now().getTime() / HOUR) * HOUR;
    const key = [appId, hour, metric, detail].join(SEPARATOR);
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
    if (this.pending.size >= FLUSH_AT_KEYS) void this.flush();
  }

  /** Flushes every USAGE_FLUSH_MS until stopped; the timer holds no process open. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), USAGE_FLUSH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** Adds what is counted so far; flushes run one after another. Counts that fail to go are kept. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    // Sorted, so that two processes adding the same keys lock them in one order.
    const rows = [...batch].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const column = (i: number) => rows.map(([key]) => key.split(SEPARATOR)[i] as string);
    try {
      await sql`
        INSERT INTO app_usage (app_id, hour, metric, detail, count)
        SELECT u.app_id, to_timestamp(u.hour_ms::bigint / 1000.0), u.metric, u.detail, u.n
        FROM unnest(${column(0)}::text[], ${column(1)}::text[], ${column(2)}::text[], ${column(3)}::text[],
                    ${rows.map(([, n]) => n)}::bigint[]) AS u(app_id, hour_ms, metric, detail, n)
        WHERE EXISTS (SELECT 1 FROM apps WHERE apps.id = u.app_id)
        ON CONFLICT (app_id, hour, metric, detail) DO UPDATE SET count = app_usage.count + excluded.count
      `.execute(this.db);
    } catch (error) {
      for (const [key, n] of batch) this.pending.set(key, (this.pending.get(key) ?? 0) + n);
      this.log.warn({ err: error, keys: batch.size }, 'app usage counts wait for the next flush');
    }
  }
}

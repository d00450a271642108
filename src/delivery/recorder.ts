import { sql } from 'kysely';
import { isDatabaseUnavailable } from '../db/database.ts';
import { eachAtMost } from '../lib/concurrency.ts';
import { reportNews } from './attempt.ts';
import { byTenant } from './by-tenant.ts';
import type { DeliveryContext } from './context.ts';
import { analyzeQueue } from './queue-statistics.ts';
import { type FinishedAttempt, recordAttempts } from './record.ts';
import type { Jitter } from './schedule.ts';

/**
 * A batch is written once this many attempts wait, or once the first of them has waited
 * FLUSH_DELAY_MS. The statements a delivery costs must not grow with the number of workers: with
 * a flush every 5 ms whatever waited, two workers sharing one receiver's pace wrote batches half
 * as large, twice as often (issue 25). Recording later delays nothing a receiver sees.
 */
const FULL_BATCH = 64;
const FLUSH_DELAY_MS = 20;
// PGlite runs one statement at a time: fewer, larger batches leave it free for the rest.
const PGLITE_FLUSH_DELAY_MS = 20;
const VACUUM_EVERY = 2000;
// Statistics of the queue this often besides (queue-statistics.ts analyzes on a backlog only).
const ANALYZE_EVERY = 100_000;
const RETRY_FIRST_MS = 250;
/** On Citus, companies' parts written at once (each its own transaction, on its company's node). */
const PARTS_AT_ONCE = 4;
const RETRY_MAX_MS = 5_000;

export interface RecorderOptions {
  jitter?: Jitter;
  /** Called with each batch once it is written (metrics). */
  onRecorded?: (attempts: readonly FinishedAttempt[]) => void;
}

/**
 * Writes finished attempts in batches (attempts that finish together share one transaction). A
 * batch that fails because the database is away is kept and written once it is back; a batch the
 * database refuses is written row by row, so one row that cannot be written (its delivery deleted
 * meanwhile, say) does not sink the others.
 */
export class AttemptRecorder {
  readonly #ctx: DeliveryContext;
  readonly #options: RecorderOptions;
  readonly #waiting: FinishedAttempt[] = [];
  #flushing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #retryMs = RETRY_FIRST_MS;
  /** A flush asked to write everything, however little: the drain does not stop at small batches. */
  #writeAll = false;
  #recordedSinceVacuum = 0;
  #recordedSinceAnalyze = 0;
  #stopped = false;

  constructor(ctx: DeliveryContext, options: RecorderOptions = {}) {
    this.#ctx = ctx;
    this.#options = options;
  }

  /** Whether anything is still to be written. */
  get busy(): boolean {
    return this.#waiting.length > 0 || this.#flushing !== null || this.#timer !== null;
  }

  add(attempt: FinishedAttempt): void {
    this.#waiting.push(attempt);
    if (this.#flushing) return;
    if (this.#waiting.length >= FULL_BATCH) this.#startDrain();
    else this.#armTimer();
  }

  /** Writes everything waiting; resolves when it is written (or, once stopped, given up). */
  flush(): Promise<void> {
    this.#writeAll = true;
    return this.#startDrain();
  }

  #armTimer(): void {
    if (this.#timer || this.#waiting.length === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        void this.#startDrain();
      },
      this.#ctx.database.engine === 'pglite' ? PGLITE_FLUSH_DELAY_MS : FLUSH_DELAY_MS,
    );
  }

  #startDrain(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#flushing) return this.#flushing;
    this.#flushing = this.#drain().finally(() => {
      this.#flushing = null;
      this.#writeAll = false;
      // What came while writing: a full batch goes now, a few wait for more (or for the delay).
      if (this.#waiting.length >= FULL_BATCH) void this.#startDrain();
      else this.#armTimer();
    });
    return this.#flushing;
  }

  /** After this, a database outage no longer holds a flush: what waits is left to the leases. */
  stop(): void {
    this.#stopped = true;
  }

  async #drain(): Promise<void> {
    let first = true;
    while (this.#waiting.length > 0 && (first || this.#writeAll || this.#waiting.length >= FULL_BATCH)) {
      first = false;
      const batch = this.#waiting.splice(0);
      const kept: FinishedAttempt[] = [];
      let away: unknown = null;
      await eachAtMost(this.#parts(batch), PARTS_AT_ONCE, async (part) => {
        try {
          await this.#write(part);
        } catch (err) {
          if (!isDatabaseUnavailable(err)) await this.#writeOneByOne(part);
          else {
            away = err;
            kept.push(...part);
          }
        }
      });
      if (kept.length === 0) {
        this.#retryMs = RETRY_FIRST_MS;
        continue;
      }
      if (this.#stopped) {
        this.#ctx.log.warn({ err: away, attempts: kept.length }, 'database away at stop: leases will expire');
        return;
      }
      // The database (or, on Citus, the node of some companies) is away: keep what it refused and
      // try again, waiting longer each time.
      this.#waiting.unshift(...kept);
      this.#ctx.log.warn(
        { err: away, retryInMs: this.#retryMs },
        'recording webhook attempts waits for the database',
      );
      await new Promise((resolve) => setTimeout(resolve, this.#retryMs).unref());
      this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
      // The kept batch is tried again now, however small.
      first = true;
    }
  }

  /**
   * The batch as written: whole on one database; on Citus company by company, so that a worker
   * node away holds back only its own companies' attempts, and no transaction spans two nodes.
   */
  #parts(batch: FinishedAttempt[]): FinishedAttempt[][] {
    if (!this.#ctx.database.distributed) return [batch];
    return byTenant(batch, (attempt) => attempt.delivery.tenant_id).map((group) => group.items);
  }

  async #write(batch: readonly FinishedAttempt[]): Promise<void> {
    const news = await recordAttempts(this.#ctx, batch, this.#options.jitter);
    // Written: what follows must not make the caller write the batch again.
    this.#options.onRecorded?.(batch);
    await reportNews(this.#ctx, news);
    await this.#vacuumNowAndThen(batch.length).catch((err: unknown) =>
      this.#ctx.log.warn({ err }, 'vacuum of the delivery queue failed'),
    );
  }

  async #writeOneByOne(batch: readonly FinishedAttempt[]): Promise<void> {
    for (const [index, attempt] of batch.entries()) {
      try {
        await this.#write([attempt]);
      } catch (err) {
        if (isDatabaseUnavailable(err)) {
          this.#waiting.unshift(...batch.slice(index));
          return;
        }
        await this.#writeWithoutAnswer(attempt, err);
      }
    }
  }

  /** The last resort: the attempt without the receiver's answer, so that it still counts. */
  async #writeWithoutAnswer(attempt: FinishedAttempt, cause: unknown): Promise<void> {
    try {
      await this.#write([{ ...attempt, result: { ...attempt.result, response_head: null } }]);
      this.#ctx.log.warn(
        { err: cause, deliveryId: attempt.delivery.id },
        'attempt recorded without its answer',
      );
    } catch (err) {
      // Its delivery is gone (the endpoint was deleted while the request was in flight).
      this.#ctx.log.warn({ err, deliveryId: attempt.delivery.id }, 'attempt could not be recorded');
    }
  }

  // PGlite runs no autovacuum: dead entries of finished messages pile up in the claim's index and
  // every claim wades through them. PostgreSQL's autovacuum does this on its own. The vacuum
  // leaves out ANALYZE but now and then, and then only the queue's columns (analyzeQueue: a full
  // one reads 30,000 rows, a cost to everyone else, issue 10). VACUUM keeps the table's size
  // current for the planner; queue-statistics.ts analyzes on a backlog. The queue is the log's
  // pending rows (decision 0074): one table.
  async #vacuumNowAndThen(recorded: number): Promise<void> {
    if (this.#ctx.database.engine !== 'pglite') return;
    this.#recordedSinceVacuum += recorded;
    this.#recordedSinceAnalyze += recorded;
    if (this.#recordedSinceVacuum < VACUUM_EVERY) return;
    this.#recordedSinceVacuum = 0;
    await sql`VACUUM webhook_deliveries`.execute(this.#ctx.db);
    if (this.#recordedSinceAnalyze < ANALYZE_EVERY) return;
    this.#recordedSinceAnalyze = 0;
    await analyzeQueue(this.#ctx);
  }
}

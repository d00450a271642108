import { sql } from 'kysely';
import type { DeliveryContext } from './context.ts';

/**
 * What the claim's plan needs to know (how many rows are queued, and for which targets), without
 * the cost of a full ANALYZE on the embedded engine. There ANALYZE holds the only connection while
 * it samples 300 rows per unit of statistics target: at the default, 30,000 rows of every column,
 * so its cost grew with the log (measured by bench:soak: 130 ms a minute in, 800 ms six minutes
 * in, every 30 s under a backlog, each a stall of every request). A target of 10 samples 3,000
 * rows, which tells the planner the queue's size and spread as well. PostgreSQL analyzes at its
 * own target, beside its other connections.
 */
export async function analyzeQueue(ctx: Pick<DeliveryContext, 'db' | 'database'>): Promise<void> {
  if (ctx.database.engine !== 'pglite') {
    await sql`ANALYZE webhook_deliveries`.execute(ctx.db);
    return;
  }
  await ctx.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL default_statistics_target = 10`.execute(trx);
    await sql`ANALYZE webhook_deliveries`.execute(trx);
  });
}

/** At most one look every this long (real time): the look is cheap, ANALYZE less so. */
const LOOK_EVERY_MS = 5_000;
/** PGlite keeps no change counters: it analyzes on a backlog at most this often. */
const PGLITE_EVERY_MS = 30_000;
/** Re-analyze once this many rows changed since the last ANALYZE, and this share of the table. */
const CHANGED_ROWS = 2_000;
const CHANGED_SHARE = 0.1;

/**
 * Keeps the planner's statistics of the delivery queue current on PostgreSQL. The claim orders
 * each target's due rows by time and takes a few dozen; the planner walks the queue index in order
 * only when it knows the queue is long (measured with the claim by due time alone, before
 * decision 0016). After a burst (thousands of events into a quiet queue) its
 * statistics still say the queue is nearly empty until autovacuum analyzes the table, which it
 * looks at once a minute at most, and meanwhile every claim reads and sorts the whole backlog
 * (measured: 12 ms a claim at 10,000 due rows instead of under 1 ms). So the worker looks at
 * the table's change counter now and then and analyzes it when it has changed much (PGlite keeps
 * no such counter and runs no autovacuum: there it analyzes on a backlog, less often).
 */
export class QueueStatistics {
  readonly #ctx: DeliveryContext;
  #lastLook = 0;
  #analyzing: Promise<void> | null = null;

  constructor(ctx: DeliveryContext) {
    this.#ctx = ctx;
  }

  /** Called after each claim that filled its batch: there is a backlog. */
  backlogSeen(): void {
    if (this.#analyzing) return;
    const now = Date.now();
    const every = this.#ctx.database.engine === 'postgres' ? LOOK_EVERY_MS : PGLITE_EVERY_MS;
    if (now - this.#lastLook < every) return;
    this.#lastLook = now;
    this.#analyzing = this.#refresh()
      .catch((err: unknown) => this.#ctx.log.warn({ err }, 'analyzing the delivery queue failed'))
      .finally(() => {
        this.#analyzing = null;
      });
  }

  async #refresh(): Promise<void> {
    if (this.#ctx.database.engine === 'pglite') {
      await analyzeQueue(this.#ctx);
      return;
    }
    const { rows } = await sql<{ changed: string; live: string }>`
      SELECT n_mod_since_analyze AS changed, n_live_tup AS live
      FROM pg_stat_user_tables WHERE relid = 'webhook_deliveries'::regclass
    `.execute(this.#ctx.db);
    const changed = Number(rows[0]?.changed ?? 0);
    const live = Number(rows[0]?.live ?? 0);
    if (changed < CHANGED_ROWS || changed < live * CHANGED_SHARE) return;
    await sql`ANALYZE webhook_deliveries`.execute(this.#ctx.db);
  }
}

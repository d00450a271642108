/**
 * Rows a side writes, from PostgreSQL's cumulative statistics (pg_stat_all_tables: n_tup_ins,
 * n_tup_upd, n_tup_del) of the tables in the side's throwaway schema, between two readings.
 * Partitions count as their partitioned table (pg_partition_root), so that the attempt log's day
 * partitions are one line; TOAST tables count apart, as their owner's TOAST (chunks, not rows).
 * Nothing here knows a side's table names: the benchmark prints whatever tables were written.
 *
 * Completeness. A backend keeps its counts in its own memory and flushes them to the shared
 * statistics lazily (PostgreSQL 15: at a transaction's end at most once a second while busy,
 * within 10 s once idle, and always when it exits). A reading right after a drain would miss the
 * last second of each pooled connection's writes, and polling until the figures stop moving could
 * stop inside a 10 s idle wait. So `settle()` ends the side's connections first: it asks each idle
 * backend with the side's application_name to terminate and waits for it to be gone
 * (pg_terminate_backend with a timeout returns once the process has left the process array, which
 * is after its exit hooks, among them the statistics flush). The sides' pools drop a connection
 * ended under them and open a new one when next asked (Waybill's pool and LISTEN connection,
 * graphile-worker's pool, both listen for the error). Only idle backends are ended: one that is
 * still running a statement is waited for. A reading is taken only after a settle, at the start of
 * a round (before anything of it is queued) and at its end (after the side stopped).
 */
import pg from 'pg';

/** Tuples inserted, updated and deleted in one table (partitions folded in). */
export interface TableWrites {
  ins: number;
  upd: number;
  del: number;
}

/** Per table name, its writes; TOAST tables as `<owner> (TOAST)`. */
export type RowsWritten = Map<string, TableWrites>;

export const isToast = (table: string) => table.endsWith(' (TOAST)');

/** Rows written, all tables but TOAST and `except` (inserted + updated + deleted). */
export function rowsTotal(writes: RowsWritten, except: readonly string[] = []): number {
  let total = 0;
  for (const [table, w] of writes)
    if (!isToast(table) && !except.includes(table)) total += w.ins + w.upd + w.del;
  return total;
}

export class RowsWrittenMeter {
  private readonly client: pg.Client;
  private readonly schema: string;
  private base: RowsWritten = new Map();

  constructor(url: string, schema: string) {
    this.client = new pg.Client({ connectionString: url, application_name: 'waybill-bench-rows-meter' });
    this.schema = schema;
  }

  async open(): Promise<void> {
    await this.client.connect();
  }

  /**
   * Ends the idle connections named `appName` (so that their backends flush their counts, see
   * above), waiting up to `timeoutMs` for busy ones to go idle first.
   */
  async settle(appName: string, timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    const mine = 'application_name = $1 AND pid <> pg_backend_pid() AND datname = current_database()';
    for (;;) {
      const { rows } = await this.client.query<{ busy: number }>(
        `SELECT count(*)::int AS busy FROM pg_stat_activity WHERE ${mine} AND state <> 'idle'`,
        [appName],
      );
      if (Number(rows[0]?.busy ?? 0) === 0) break;
      if (Date.now() > until) throw new Error(`connections of ${appName} still busy after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.client.query(
      `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE ${mine} AND state = 'idle'`,
      [appName],
    );
  }

  /** The schema's tables' counts now, partitions folded into their root, TOAST apart. */
  private async read(): Promise<RowsWritten> {
    // A new snapshot of the statistics (the default stats_fetch_consistency caches one per transaction).
    await this.client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await this.client.query<{ name: string; ins: string; upd: string; del: string }>(
      `SELECT name, sum(n_tup_ins)::text AS ins, sum(n_tup_upd)::text AS upd, sum(n_tup_del)::text AS del
         FROM (
           SELECT (SELECT relname FROM pg_class WHERE oid = coalesce(pg_partition_root(s.relid), s.relid)) AS name,
                  s.n_tup_ins, s.n_tup_upd, s.n_tup_del
             FROM pg_stat_all_tables s
            WHERE s.schemaname = $1
           UNION ALL
           SELECT (SELECT relname FROM pg_class WHERE oid = coalesce(pg_partition_root(c.oid), c.oid)) || ' (TOAST)',
                  s.n_tup_ins, s.n_tup_upd, s.n_tup_del
             FROM pg_stat_all_tables s
             JOIN pg_class c ON c.reltoastrelid = s.relid
             JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = $1
         ) t
        GROUP BY name`,
      [this.schema],
    );
    return new Map(
      rows.map((row) => [row.name, { ins: Number(row.ins), upd: Number(row.upd), del: Number(row.del) }]),
    );
  }

  /** Settles `appName`'s connections, then takes the starting reading. */
  async start(appName: string): Promise<void> {
    await this.settle(appName);
    this.base = await this.read();
  }

  /** Settles `appName`'s connections, then gives what was written since start, per table (none left out). */
  async stop(appName: string): Promise<RowsWritten> {
    await this.settle(appName);
    const now = await this.read();
    const written: RowsWritten = new Map();
    for (const [table, w] of now) {
      const b = this.base.get(table) ?? { ins: 0, upd: 0, del: 0 };
      const d = { ins: w.ins - b.ins, upd: w.upd - b.upd, del: w.del - b.del };
      if (d.ins || d.upd || d.del) written.set(table, d);
    }
    return written;
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}

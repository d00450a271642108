/**
 * CPU seconds spent by the database server while a side drains its queue, read from
 * /proc/<pid>/stat (utime + stime) of the server's processes: PostgreSQL's backends listed in
 * pg_stat_activity, Redis's one process. Needs the server on this machine (it is, for the bench).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';

let ticksPerSecond = 0;
function clockTicks(): number {
  if (!ticksPerSecond) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** utime + stime of a process in clock ticks, or null when it is gone or not ours to read. */
export function cpuTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/** The URL with an application_name, so that the CPU meter tells a side's connections from the rest. */
export function withAppName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', name);
  return parsed.toString();
}

export interface ServerCpu {
  /** CPU seconds of the side's own connections (client backends). */
  backends: number;
  /** CPU seconds of the server's background processes (WAL writer, checkpointer, autovacuum...). */
  background: number;
  total: number;
  /**
   * Bytes of WAL the whole server wrote meanwhile (PostgreSQL only; sides run one at a time, so
   * it is the side's, with whatever autovacuum and checkpoints added). Independent of CPU speed.
   */
  walBytes?: number;
}

/**
 * Meters PostgreSQL while a side runs. Client backends count when their application_name is the
 * side's; every other kind of backend (WAL writer, checkpointer, autovacuum) counts as background.
 * pg_stat_activity is polled every 200 ms so that backends opened during the drain are counted,
 * from their start; one that exits between two polls loses its last ticks (pools keep theirs open).
 */
export class PostgresCpuMeter {
  private readonly client: pg.Client;
  private readonly base = new Map<number, number>();
  private readonly last = new Map<number, { ticks: number; own: boolean }>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private appName = '';
  private walStart = '';
  available = true;

  constructor(url: string) {
    this.client = new pg.Client({ connectionString: url, application_name: 'waybill-bench-meter' });
  }

  async open(): Promise<void> {
    await this.client.connect();
    // A server on another machine, or processes this user may not read, give no figure.
    const { rows } = await this.client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    this.available = cpuTicks(rows[0]?.pid ?? 0) !== null;
  }

  /** The server's processes that belong to a side named `appName`, and the background ones. */
  private async sample(appName: string, record: (pid: number, ticks: number, own: boolean) => void) {
    const { rows } = await this.client.query<{ pid: number; own: boolean }>(
      `SELECT pid, application_name = $1 AS own FROM pg_stat_activity
        WHERE pid <> pg_backend_pid() AND (application_name = $1 OR backend_type <> 'client backend')`,
      [appName],
    );
    for (const row of rows) {
      const ticks = cpuTicks(row.pid);
      if (ticks !== null) record(row.pid, ticks, row.own);
    }
  }

  async start(appName: string): Promise<void> {
    this.base.clear();
    this.last.clear();
    await this.sample(appName, (pid, ticks) => this.base.set(pid, ticks));
    const wal = await this.client.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
    this.walStart = wal.rows[0]?.lsn ?? '';
    this.timer = setInterval(() => {
      this.polling ??= this.sample(appName, (pid, ticks, own) => this.last.set(pid, { ticks, own }))
        .catch(() => {})
        .finally(() => {
          this.polling = null;
        });
    }, 200);
    this.timer.unref();
    this.appName = appName;
  }

  /** What was spent since start, the meter still running (a split: queueing, then the drain). */
  async lap(): Promise<ServerCpu> {
    await this.polling;
    await this.sample(this.appName, (pid, ticks, own) => this.last.set(pid, { ticks, own }));
    return this.spent();
  }

  async stop(): Promise<ServerCpu> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.polling;
    await this.sample(this.appName, (pid, ticks, own) => this.last.set(pid, { ticks, own }));
    return this.spent();
  }

  private async spent(): Promise<ServerCpu> {
    let own = 0;
    let background = 0;
    for (const [pid, { ticks, own: isOwn }] of this.last) {
      const spent = ticks - (this.base.get(pid) ?? 0);
      if (isOwn) own += spent;
      else background += spent;
    }
    const wal = await this.client.query<{ bytes: string }>(
      'SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::text AS bytes',
      [this.walStart],
    );
    const hz = clockTicks();
    return {
      backends: own / hz,
      background: background / hz,
      total: (own + background) / hz,
      walBytes: Number(wal.rows[0]?.bytes ?? 0),
    };
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}

/** Meters one process (redis-server) between start and stop. */
export class ProcessCpuMeter {
  private before = 0;
  readonly pid: number;
  constructor(pid: number) {
    this.pid = pid;
  }
  get available(): boolean {
    return cpuTicks(this.pid) !== null;
  }
  start(): void {
    this.before = cpuTicks(this.pid) ?? 0;
  }
  stop(): ServerCpu {
    const spent = ((cpuTicks(this.pid) ?? this.before) - this.before) / clockTicks();
    return { backends: spent, background: 0, total: spent };
  }
}

import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { migrations } from '../../db/migrations/index.ts';
import { SECOND } from '../../lib/clock.ts';

/**
 * What the process says about itself to /readyz. The delivery worker sets `workerHeartbeat` when it
 * starts (and back to null when it stops); main.ts sets `starting` until the database answered and
 * the migrations are applied, and `shuttingDown` when SIGTERM arrives.
 */
export interface HealthState {
  /** Until the process has its database: /readyz answers 503, the API 503 `service.starting`. */
  starting: boolean;
  /** From SIGTERM on: /readyz answers 503 at once, so a load balancer stops sending before the drain. */
  shuttingDown: boolean;
  /** When this process runs a worker: the time (ctx.clock) its loop last turned, null before the first turn. */
  workerHeartbeat: (() => Date | null) | null;
}

export function newHealthState(): HealthState {
  return { starting: false, shuttingDown: false, workerHeartbeat: null };
}

/** CONTRACT.md: the worker's loop must have turned within the last 30 s. */
export const WORKER_STALE_MS = 30 * SECOND;
/** A database that takes longer than this to answer counts as not answering. */
export const DATABASE_CHECK_MS = 2 * SECOND;

export type ReadinessCheck = 'shutting_down' | 'starting' | 'database' | 'migrations' | 'worker';

export interface Readiness {
  status: 'ready' | 'not_ready';
  failed: ReadinessCheck[];
}

export interface ReadinessDeps {
  db: Db;
  health: HealthState;
  now: Date;
  /** Bound of the database check; tests may shorten it. */
  timeoutMs?: number;
}

/** The names of the migrations the database has applied, or null when it does not answer in time. */
async function appliedMigrations(db: Db, timeoutMs: number): Promise<Set<string> | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
    timer.unref();
  });
  // Kysely's migrator keeps its bookkeeping in kysely_migration, in the schema the process works in.
  const query = sql<{ name: string }>`SELECT name FROM kysely_migration`
    .execute(db)
    .then(({ rows }) => new Set(rows.map((row) => row.name)))
    .catch(() => null);
  try {
    return await Promise.race([query, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * GET /readyz (CONTRACT.md, Operability): ready when the process has started, the database
 * answers, every migration this code knows is applied (a newer process may have applied more: that
 * is fine during a rolling deploy), and, in a process running a worker, its loop turned within 30 s.
 */
export async function readiness(deps: ReadinessDeps): Promise<Readiness> {
  if (deps.health.shuttingDown) return { status: 'not_ready', failed: ['shutting_down'] };
  // Still starting: the other checks say what it waits for (the database, the migrations).
  const failed: ReadinessCheck[] = deps.health.starting ? ['starting'] : [];
  const applied = await appliedMigrations(deps.db, deps.timeoutMs ?? DATABASE_CHECK_MS);
  if (applied === null) failed.push('database');
  else if (Object.keys(migrations).some((name) => !applied.has(name))) failed.push('migrations');
  const heartbeat = deps.health.workerHeartbeat;
  if (heartbeat) {
    const last = heartbeat();
    if (last === null || deps.now.getTime() - last.getTime() > WORKER_STALE_MS) failed.push('worker');
  }
  return { status: failed.length === 0 ? 'ready' : 'not_ready', failed };
}

import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DAY } from '../lib/clock.ts';
import type { DeliveryContext } from './context.ts';

/** Day partitions made ahead of the clock, so that the default partition stays empty. */
const DAYS_AHEAD = 3;
const PREFIX = 'webhook_attempts_p';
// Partitions are made and dropped by one process at a time (the key is arbitrary but fixed).
const LOCK_KEY = 7_316_204_551;
/**
 * Dropping a day locks the whole log: one waiting behind a long read would hold every write behind
 * it. It gives up instead, and the next run (an hour later) tries again.
 */
const DDL_LOCK_TIMEOUT = '2s';

/** One change to the log's partitions: alone among processes, and never waiting long for a lock. */
async function partitionChange(ctx: DeliveryContext, change: (trx: Db) => Promise<void>): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
    await sql`SELECT set_config('lock_timeout', ${DDL_LOCK_TIMEOUT}, true)`.execute(trx);
    await change(trx);
  });
}

/** The start (UTC midnight) of the day `time` falls in. */
export function dayOf(time: Date): Date {
  return new Date(Math.floor(time.getTime() / DAY) * DAY);
}

function nameOf(day: Date): string {
  return `${PREFIX}${day.toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The day a partition's name stands for (UTC), or null for a name not ours. */
function dayFromName(name: string): Date | null {
  const match = /^webhook_attempts_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  if (!match) return null;
  return new Date(`${match[1]}-${match[2]}-${match[3]}T00:00:00.000Z`);
}

/** The attempt log's day partitions, oldest first, by name. */
export async function attemptPartitions(ctx: DeliveryContext): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'webhook_attempts'::regclass`.execute(ctx.db);
  return rows
    .map((row) => row.name)
    .filter((name) => dayFromName(name) !== null)
    .sort();
}

/**
 * Makes the day partition of `day`. Rows the default partition took for that day meanwhile (a
 * clock ahead of the partitions, or a process that wrote before any were made) move into it, in
 * the same transaction: PostgreSQL refuses a partition whose rows the default partition holds.
 */
export async function createAttemptDay(ctx: DeliveryContext, day: Date): Promise<void> {
  const name = sql.id(nameOf(day));
  const from = day.toISOString();
  const to = new Date(day.getTime() + DAY).toISOString();
  await partitionChange(ctx, async (trx) => {
    const exists = await sql<{ oid: string | null }>`SELECT to_regclass(${nameOf(day)})::text AS oid`.execute(
      trx,
    );
    if (exists.rows[0]?.oid) return;
    await sql`CREATE TABLE ${name} (LIKE webhook_attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`.execute(
      trx,
    );
    await sql`
      WITH moved AS (
        DELETE FROM webhook_attempts_default
        WHERE attempted_at >= ${from}::timestamptz AND attempted_at < ${to}::timestamptz
        RETURNING *
      )
      INSERT INTO ${name} SELECT * FROM moved`.execute(trx);
    await sql`ALTER TABLE webhook_attempts ATTACH PARTITION ${name}
      FOR VALUES FROM (${sql.lit(from)}) TO (${sql.lit(to)})`.execute(trx);
  });
}

/**
 * Keeps the attempt log's days (decision 0015): makes today's partition and the next few, and drops
 * every day partition wholly older than `cutoff`, which takes a day of attempts away at the cost
 * of removing one table. Returns what it made and dropped.
 */
export async function maintainAttemptPartitions(
  ctx: DeliveryContext,
  cutoff: Date,
): Promise<{ created: string[]; dropped: string[] }> {
  const existing = new Set(await attemptPartitions(ctx));
  const created: string[] = [];
  const today = dayOf(ctx.clock.now());
  for (let ahead = 0; ahead <= DAYS_AHEAD; ahead += 1) {
    const day = new Date(today.getTime() + ahead * DAY);
    // A day already past the cutoff would only be dropped again.
    if (day.getTime() + DAY <= cutoff.getTime() || existing.has(nameOf(day))) continue;
    // A day not made now is made by the next run; meanwhile the default partition takes its rows.
    if (await tried(ctx, `making ${nameOf(day)}`, () => createAttemptDay(ctx, day)))
      created.push(nameOf(day));
  }
  const dropped: string[] = [];
  for (const name of existing) {
    const day = dayFromName(name);
    if (!day || day.getTime() + DAY > cutoff.getTime()) continue;
    const drop = () =>
      partitionChange(ctx, async (trx) => {
        await sql`DROP TABLE IF EXISTS ${sql.id(name)}`.execute(trx);
      });
    if (await tried(ctx, `dropping ${name}`, drop)) dropped.push(name);
  }
  return { created, dropped };
}

/** Runs one partition change; one that fails (a lock not had in time) is logged and left to the next run. */
async function tried(ctx: DeliveryContext, what: string, change: () => Promise<void>): Promise<boolean> {
  try {
    await change();
    return true;
  } catch (err) {
    ctx.log.warn({ err }, `attempt log partitions: ${what} failed; the next run tries again`);
    return false;
  }
}

/** Removes the default partition's rows older than `cutoff` (the few no day partition took). */
export async function purgeDefaultAttempts(ctx: DeliveryContext, cutoff: Date): Promise<number> {
  const result =
    await sql`DELETE FROM webhook_attempts_default WHERE attempted_at < ${cutoff.toISOString()}::timestamptz`.execute(
      ctx.db,
    );
  return Number(result.numAffectedRows ?? 0);
}

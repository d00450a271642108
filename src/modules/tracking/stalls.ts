import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { runAfterCommit } from '../../context.ts';
import type { BackgroundJob } from '../../jobs.ts';
import { MINUTE } from '../../lib/clock.ts';
import { recordEvents } from '../shipments/events.ts';
import type { ShipmentsTable } from '../shipments/tables.ts';
import { stalledEvent } from './events.ts';

/** Statuses that never stall: the shipment's journey is over (or has not begun). */
const QUIET = ['draft', 'delivered', 'returned', 'cancelled'];

/** Shipments told per run at most; the next run takes the rest. */
const BATCH = 500;

/**
 * Tells shipment.stalled (2026-12-01) once per stall: a shipment not final whose last checkpoint or
 * move (`activity_at`) is older than its company's `stall_after_hours` (default 72), on the
 * service's clock. A checkpoint or a move clears `stall_reported_at`, so the next stall is told
 * again. Answers how many were told.
 */
export async function reportStalls(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const due = await sql<{ id: string; tenant_id: string }>`
    SELECT s.id, s.tenant_id FROM shipments s JOIN companies c ON c.id = s.tenant_id
    WHERE s.stall_reported_at IS NULL AND s.activity_at IS NOT NULL
      AND s.status NOT IN (${sql.join(QUIET)})
      AND s.activity_at < ${now}::timestamptz - make_interval(hours => c.stall_after_hours)
    ORDER BY s.activity_at LIMIT ${BATCH}`.execute(ctx.db);
  let told = 0;
  for (const { id, tenant_id } of due.rows) {
    const reported = await ctx.db.transaction().execute(async (trx) => {
      // Claimed by the update: two runs at once tell a stall once.
      const row = (await trx
        .updateTable('shipments')
        .set({ stall_reported_at: now })
        .where('id', '=', id)
        .where('tenant_id', '=', tenant_id)
        .where('stall_reported_at', 'is', null)
        .returningAll()
        .executeTakeFirst()) as ShipmentsTable | undefined;
      if (!row?.activity_at) return false;
      await recordEvents(ctx, trx, [stalledEvent(row, row.activity_at, now)]);
      return true;
    });
    if (reported) told += 1;
  }
  if (told > 0) runAfterCommit(ctx);
  return told;
}

export const stallJob: BackgroundJob = { name: 'shipment-stalls', everyMs: 5 * MINUTE, run: reportStalls };

import { sql } from 'kysely';
import { DAY } from '../lib/clock.ts';
import type { DeliveryContext } from './context.ts';
import { maintainAttemptPartitions, purgeDefaultAttempts } from './partitions.ts';

/** Spec 2.5 and 8: delivery history is kept 30 days. */
export const HISTORY_MS = 30 * DAY;

/** Events removed per statement, and statements per run at most (the next run goes on). */
const EVENT_BATCH = 5_000;
const EVENT_BATCHES_PER_RUN = 200;

export interface PurgedHistory {
  deliveries: number;
  /** Events (their envelopes) past 30 days, removed after their deliveries. */
  events: number;
  /** Attempts removed row by row: those the default partition took. */
  attempts: number;
  /** Day partitions of the attempt log dropped whole. */
  droppedDays: string[];
}

/**
 * Removes history older than 30 days: the attempt log's days whole (partitions.ts), then the
 * deliveries, then the events. A day partition goes once all of its day is past the cutoff; its
 * deliveries went before it, so no delivery still listed ever misses an attempt. An event goes
 * after its deliveries (made with it, at its time), so no delivery still listed or pending ever
 * misses its message (decision 0022).
 */
export async function purgeWebhookHistory(ctx: DeliveryContext): Promise<PurgedHistory> {
  const cutoff = new Date(ctx.clock.now().getTime() - HISTORY_MS);
  const { dropped } = await maintainAttemptPartitions(ctx, cutoff);
  const attempts = await purgeDefaultAttempts(ctx, cutoff);
  // Schedules span under 3 days, so only a delivery held back by a suspended app is still pending
  // this old; it goes with the rest of the history.
  const deliveries = await ctx.db
    .deleteFrom('webhook_deliveries')
    .where('created_at', '<', cutoff)
    .executeTakeFirst();
  const events = await purgeEvents(ctx, cutoff);
  return { deliveries: Number(deliveries.numDeletedRows), events, attempts, droppedDays: dropped };
}

/**
 * Events older than `cutoff`, in batches (short transactions, no long lock on the table). A
 * delivery is made with its event, so every delivery of these went just before; one still pending
 * keeps its event all the same (a pending delivery reads its event's envelope when sent).
 */
async function purgeEvents(ctx: DeliveryContext, cutoff: Date): Promise<number> {
  let removed = 0;
  for (let batch = 0; batch < EVENT_BATCHES_PER_RUN; batch++) {
    const result = await sql`
      DELETE FROM events WHERE id IN (
        SELECT ev.id FROM events ev
        WHERE ev.created_at < ${cutoff.toISOString()}::timestamptz
          AND ev.id NOT IN (SELECT d.event_id FROM webhook_deliveries d WHERE d.status = 'pending')
        ORDER BY ev.created_at
        LIMIT ${EVENT_BATCH}
      )`.execute(ctx.db);
    const count = Number(result.numAffectedRows ?? 0);
    removed += count;
    if (count < EVENT_BATCH) break;
  }
  return removed;
}

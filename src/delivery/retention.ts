import { DAY } from '../lib/clock.ts';
import type { DeliveryContext } from './context.ts';
import { maintainAttemptPartitions, purgeDefaultAttempts } from './partitions.ts';

/** Spec 2.5 and 8: delivery history is kept 30 days. */
export const HISTORY_MS = 30 * DAY;

export interface PurgedHistory {
  deliveries: number;
  /** Attempts removed row by row: those the default partition took. */
  attempts: number;
  /** Day partitions of the attempt log dropped whole. */
  droppedDays: string[];
}

/**
 * Removes history older than 30 days: the attempt log's days whole (partitions.ts), then the
 * deliveries. A day partition goes once all of its day is past the cutoff; its deliveries went
 * before it, so no delivery still listed ever misses an attempt.
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
  return { deliveries: Number(deliveries.numDeletedRows), attempts, droppedDays: dropped };
}

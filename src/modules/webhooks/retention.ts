import type { AppContext } from '../../context.ts';
import type { BackgroundJob } from '../../jobs.ts';
import { DAY, HOUR } from '../../lib/clock.ts';

/** Spec 2.5 and 8: delivery history is kept 30 days. */
export const HISTORY_MS = 30 * DAY;

/** Removes deliveries (their attempts go with them) and stray attempts older than 30 days. */
export async function purgeWebhookHistory(
  ctx: AppContext,
): Promise<{ deliveries: number; attempts: number }> {
  const cutoff = new Date(ctx.clock.now().getTime() - HISTORY_MS);
  const attempts = await ctx.db
    .deleteFrom('webhook_attempts')
    .where('attempted_at', '<', cutoff)
    .executeTakeFirst();
  // Schedules span under 3 days, so only a delivery held back by a suspended app is still pending
  // this old; it goes with the rest of the history.
  const deliveries = await ctx.db
    .deleteFrom('webhook_deliveries')
    .where('created_at', '<', cutoff)
    .executeTakeFirst();
  return { deliveries: Number(deliveries.numDeletedRows), attempts: Number(attempts.numDeletedRows) };
}

export const webhookRetentionJob: BackgroundJob = {
  name: 'webhook-history',
  everyMs: HOUR,
  run: purgeWebhookHistory,
};

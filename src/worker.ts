import type { AppContext } from './context.ts';
import { purgeWebhookHistory } from './delivery/retention.ts';
import { startDeliveryWorker } from './delivery/worker.ts';
import { type BackgroundJob, housekeeping, type Runner, startHousekeeping } from './jobs.ts';
import { HOUR } from './lib/clock.ts';
import { listenerSweepJob } from './modules/listeners/service.ts';
import { erasureMessagesJob } from './modules/privacy/erasure.ts';

/** Delivery history older than 30 days goes (spec 2.5 and 8). */
const webhookRetentionJob: BackgroundJob = {
  name: 'webhook-history',
  everyMs: HOUR,
  // Today's partition of the attempt log is made at start, before the first attempts are written.
  atStart: true,
  run: purgeWebhookHistory,
};

/** Everything that runs in the background of `waybill serve` and `waybill worker`. */
export function startWorkers(ctx: AppContext): Runner {
  const runners: Runner[] = [
    startHousekeeping(ctx, [...housekeeping, webhookRetentionJob, listenerSweepJob, erasureMessagesJob]),
    startDeliveryWorker(ctx, { leaseMs: ctx.config.webhookLeaseMs }),
  ];
  return {
    async stop() {
      await Promise.all(runners.map((runner) => runner.stop()));
    },
  };
}

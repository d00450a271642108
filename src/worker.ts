import type { AppContext } from './context.ts';
import { housekeeping, type Runner, startHousekeeping } from './jobs.ts';
import { listenerSweepJob } from './modules/listeners/service.ts';
import { webhookRetentionJob } from './modules/webhooks/retention.ts';
import { startDeliveryWorker } from './modules/webhooks/worker.ts';

/** Everything that runs in the background of `waybill serve` and `waybill worker`. */
export function startWorkers(ctx: AppContext): Runner {
  const runners: Runner[] = [
    startHousekeeping(ctx, [...housekeeping, webhookRetentionJob, listenerSweepJob]),
    startDeliveryWorker(ctx, { leaseMs: ctx.config.webhookLeaseMs }),
  ];
  return {
    async stop() {
      await Promise.all(runners.map((runner) => runner.stop()));
    },
  };
}

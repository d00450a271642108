import type { AppContext } from './context.ts';
import { purgeWebhookHistory } from './delivery/retention.ts';
import { startDeliveryWorker } from './delivery/worker.ts';
import { type BackgroundJob, housekeeping, type Runner, startHousekeeping } from './jobs.ts';
import { HOUR } from './lib/clock.ts';

/** Delivery history older than 30 days goes (spec 2.5 and 8). */
const webhookRetentionJob: BackgroundJob = {
  name: 'webhook-history',
  everyMs: HOUR,
  // The attempt log's partitions for today and the next days are made at start (rows written
  // before then wait in the default partition and move into their day's when it is made).
  atStart: true,
  run: purgeWebhookHistory,
};

async function backgroundJobs(): Promise<BackgroundJob[]> {
  const [
    { listenerSweepJob },
    { erasureMessagesJob },
    { recipientMailJob },
    { stallJob },
    { simulationJob },
  ] = await Promise.all([
    import('./modules/listeners/service.ts'),
    import('./modules/privacy/erasure.ts'),
    import('./modules/recipients/mail-sender.ts'),
    import('./modules/tracking/stalls.ts'),
    import('./modules/tracking/simulation.ts'),
  ]);
  return [
    ...housekeeping,
    webhookRetentionJob,
    listenerSweepJob,
    erasureMessagesJob,
    recipientMailJob,
    stallJob,
    simulationJob,
  ];
}

export interface Workers extends Runner {
  /** The delivery worker's first claim is done and answered (DeliveryWorker.started). */
  started: Promise<void>;
}

/** Everything that runs in the background of `waybill serve` and `waybill worker`. */
export function startWorkers(ctx: AppContext): Workers {
  const delivery = startDeliveryWorker(ctx, { leaseMs: ctx.config.webhookLeaseMs });
  let jobs: Runner | null = null;
  let stopped = false;
  // Housekeeping starts after the first claim: its modules (the listeners' and the privacy
  // requests', with the event catalogue's schemas) and its first run (after a long stop, a day of
  // history to remove) do not hold up the first deliveries (issue 25 item 3). A module that fails
  // to load is a fault: unhandled, the rejection ends the process (lifetime.ts).
  void delivery.started.then(backgroundJobs).then((list) => {
    if (!stopped) jobs = startHousekeeping(ctx, list);
  });
  return {
    started: delivery.started,
    async stop() {
      stopped = true;
      await Promise.all([delivery.stop(), jobs?.stop()]);
    },
  };
}

import type { AppContext } from './context.ts';
import { isDatabaseUnavailable } from './db/database.ts';
import { purgeIdempotencyKeys } from './http/idempotency.ts';
import { HOUR, SECOND } from './lib/clock.ts';
import { purgeSignInFailures } from './modules/accounts/sign-in-throttle.ts';
import { purgeInboundLog } from './modules/inbound/messages.ts';
import { purgeAddressCounts } from './modules/oauth/address-limit.ts';
import { purgeDocumentFailures } from './modules/oauth/client-metadata.ts';
import { purgeUnusedRegistrations } from './modules/oauth/registration.ts';
import { dropSpentPairs } from './modules/oauth/tokens.ts';
import { purgeOutboundBudget } from './modules/outbound/budget.ts';

export interface BackgroundJob {
  name: string;
  /** How often it runs, in real time (not the injected clock: this is a timer, not a rule). */
  everyMs: number;
  /** Runs once at start too (a job that makes what the first writes need). */
  atStart?: boolean;
  run(ctx: AppContext): Promise<unknown>;
}

/** Periodic housekeeping; modules add their own (history retention, key expiry). */
export const housekeeping: BackgroundJob[] = [
  { name: 'idempotency-keys', everyMs: HOUR, run: purgeIdempotencyKeys },
  { name: 'sign-in-failures', everyMs: HOUR, run: purgeSignInFailures },
  { name: 'outbound-budget', everyMs: HOUR, run: purgeOutboundBudget },
  { name: 'unused-agent-registrations', everyMs: HOUR, run: purgeUnusedRegistrations },
  { name: 'oauth-address-counts', everyMs: HOUR, run: purgeAddressCounts },
  { name: 'client-document-failures', everyMs: HOUR, run: purgeDocumentFailures },
  { name: 'inbound-log', everyMs: HOUR, run: purgeInboundLog },
  // The agents' refresh grace is 30 s: its sealed pairs are kept no longer than needed.
  { name: 'spent-refresh-pairs', everyMs: 30 * SECOND, run: dropSpentPairs },
];

export interface Runner {
  stop(): Promise<void>;
}

/** After a failure because the database was away, a job runs again this soon, then less and less often. */
const RETRY_FIRST_MS = 5_000;
const RETRY_MAX_MS = 5 * 60_000;

/**
 * Runs each job every `everyMs` after its last run. A run that fails because the database is away
 * (an outage) is tried again sooner, with a growing wait, rather than an hour later: the attempt
 * log's partitions for the coming days are made by one of them.
 */
function startJob(ctx: AppContext, job: BackgroundJob): () => void {
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  let retryMs = RETRY_FIRST_MS;
  const runIn = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(run, ms);
    timer.unref();
  };
  async function run(): Promise<void> {
    try {
      await job.run(ctx);
      retryMs = RETRY_FIRST_MS;
      runIn(job.everyMs);
    } catch (err) {
      if (!isDatabaseUnavailable(err)) {
        ctx.log.error({ err, job: job.name }, 'housekeeping job failed');
        runIn(job.everyMs);
        return;
      }
      const wait = Math.min(retryMs, job.everyMs);
      ctx.log.warn({ err, job: job.name, retryInMs: wait }, 'housekeeping job waits for the database');
      retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
      runIn(wait);
    }
  }
  if (job.atStart) void run();
  else runIn(job.everyMs);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

export function startHousekeeping(ctx: AppContext, jobs: BackgroundJob[] = housekeeping): Runner {
  const stops = jobs.map((job) => startJob(ctx, job));
  return {
    async stop() {
      for (const stop of stops) stop();
    },
  };
}

import type { AppContext } from './context.ts';
import { purgeIdempotencyKeys } from './http/idempotency.ts';
import { HOUR } from './lib/clock.ts';
import { purgeSignInFailures } from './modules/accounts/sign-in-throttle.ts';

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
];

export interface Runner {
  stop(): Promise<void>;
}

export function startHousekeeping(ctx: AppContext, jobs: BackgroundJob[] = housekeeping): Runner {
  const timers = jobs.map((job) => {
    const run = () =>
      job.run(ctx).catch((err: unknown) => ctx.log.error({ err, job: job.name }, 'housekeeping job failed'));
    if (job.atStart) void run();
    const timer = setInterval(run, job.everyMs);
    timer.unref();
    return timer;
  });
  return {
    async stop() {
      for (const timer of timers) clearInterval(timer);
    },
  };
}

import type { AppContext } from './context.ts';
import { type Runner, startHousekeeping } from './jobs.ts';

/** Everything that runs in the background of `waybill serve` and `waybill worker`. */
export function startWorkers(ctx: AppContext): Runner {
  const runners: Runner[] = [startHousekeeping(ctx)];
  return {
    async stop() {
      await Promise.all(runners.map((runner) => runner.stop()));
    },
  };
}

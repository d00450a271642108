import type { AppContext } from '../context.ts';

/** What the demo seed made, handed to each module that adds to it (src/seed.ts). */
export interface DemoSeed {
  tenantId: string;
  customerAccountId: string;
  lines: string[];
}

/** A module's addition to the demo (an app for the developer, a store listing). */
export type DemoExtension = (
  ctx: AppContext,
  seed: DemoSeed,
  people: Record<string, string>,
) => Promise<void>;

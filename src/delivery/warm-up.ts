import { claimDue } from './claim.ts';
import type { DeliveryContext } from './context.ts';
import { fanOut } from './fanout.ts';

/** Ends a warm-up's transaction with a rollback: it must leave nothing behind. */
class RolledBack extends Error {}

/** Rounds of the warm-up: the first compiles and plans, the next ones run what was made. */
const ROUNDS = 3;
/** A claim as large as the worker's on PGlite (worker.ts PGLITE_BATCH). */
const CLAIM_LIMIT = 256;

/**
 * Runs the delivery engine's hot statements before the process serves (issue 34 item 4): the
 * claim (`claimDue`, the function webhook_claim) and the fan-out (`fanOut`, the function
 * webhook_fan_out, for an event of no tenant: it matches no target), in transactions that are
 * always rolled back, so that nothing is claimed, leased or written. On the embedded engine a
 * fresh process pays for each statement's first runs: PL/pgSQL compiles the functions and plans
 * their statements, PostgreSQL fills its catalogue caches, and V8 compiles the WebAssembly of each
 * code path of PostgreSQL the first time it runs. Paid here, while nothing waits, instead of by the
 * first requests and deliveries.
 */
export async function warmDeliveryStatements(ctx: DeliveryContext): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    await ctx.db
      .transaction()
      .execute(async (trx) => {
        const now = ctx.clock.now();
        // The claim the worker makes on this database (on Citus, company by company).
        await claimDue(
          trx,
          {
            workerId: 'wrk_warm_up',
            now,
            leaseUntil: new Date(now.getTime() + 60_000),
            limit: CLAIM_LIMIT,
            perEndpoint: 8,
            room: new Map(),
            after: '',
          },
          ctx.database.distributed,
        );
        await fanOut(ctx, trx, [
          {
            id: 'evt_warm_up',
            type: 'shipment.status_changed',
            tenantId: 'ten_warm_up',
            livemode: false,
            customerAccountId: null,
            payload: '{}',
            createdAt: now,
          },
        ]);
        throw new RolledBack();
      })
      .catch((err: unknown) => {
        if (!(err instanceof RolledBack)) throw err;
      });
  }
}

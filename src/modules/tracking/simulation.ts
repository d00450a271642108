import type { AppContext } from '../../context.ts';
import { runAfterCommit } from '../../context.ts';
import type { BackgroundJob } from '../../jobs.ts';
import { DAY, HOUR, SECOND } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { TenantAccess } from '../accounts/access.ts';
import type { ShipmentStatus } from '../shipments/lifecycle.ts';
import { getShipment } from '../shipments/service.ts';
import { applyCheckpointIn } from './checkpoints.ts';

/** CONTRACT.md, Tracking: the scenarios a test shipment can be walked through. */
export const SCENARIOS = ['on_time', 'delayed', 'exception_then_delivered', 'returned'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/** How far apart the walk's checkpoints are, on the service's clock. */
export const SIMULATION_STEP_MS = 5 * SECOND;

interface Step {
  status: ShipmentStatus;
  sub_status: string;
  message: string;
  city: string;
  country: string;
  /** The estimate this checkpoint carries, as days from the walk's start (earliest, latest). */
  estimate?: [number, number];
  /** The delivery's proof, with the move to delivered. */
  signedBy?: string;
}

const PICKED_UP: Step = {
  status: 'picked_up',
  sub_status: 'picked_up.from_sender',
  message: 'Parcel collected from the sender',
  city: 'Rotterdam',
  country: 'NL',
  estimate: [2, 3],
};
const DEPARTED: Step = {
  status: 'in_transit',
  sub_status: 'in_transit.departed_facility',
  message: 'Departed the sorting centre',
  city: 'Venlo',
  country: 'NL',
};
const ARRIVED: Step = {
  status: 'in_transit',
  sub_status: 'in_transit.arrived_facility',
  message: 'Arrived at the delivery depot',
  city: 'Düsseldorf',
  country: 'DE',
};
const OUT: Step = {
  status: 'out_for_delivery',
  sub_status: 'out_for_delivery.on_vehicle',
  message: 'On the delivery vehicle',
  city: 'Düsseldorf',
  country: 'DE',
};
const DELIVERED: Step = {
  status: 'delivered',
  sub_status: 'delivered.recipient',
  message: 'Delivered',
  city: 'Düsseldorf',
  country: 'DE',
  signedBy: 'Signed at the door',
};

/** Each scenario's checkpoints, in order; every status event of the walk comes from these. */
const WALKS: Record<Scenario, readonly Step[]> = {
  on_time: [PICKED_UP, DEPARTED, ARRIVED, OUT, DELIVERED],
  delayed: [
    PICKED_UP,
    DEPARTED,
    {
      status: 'in_transit',
      sub_status: 'in_transit.delayed',
      message: 'Delayed: the linehaul missed its connection',
      city: 'Venlo',
      country: 'NL',
      estimate: [3, 4],
    },
    ARRIVED,
    OUT,
    DELIVERED,
  ],
  exception_then_delivered: [
    PICKED_UP,
    DEPARTED,
    ARRIVED,
    {
      status: 'exception',
      sub_status: 'exception.address_issue',
      message: 'The address is incomplete: the carrier asks the sender',
      city: 'Düsseldorf',
      country: 'DE',
      estimate: [3, 4],
    },
    OUT,
    DELIVERED,
  ],
  returned: [
    PICKED_UP,
    DEPARTED,
    {
      status: 'exception',
      sub_status: 'exception.refused',
      message: 'The recipient refused the parcel',
      city: 'Düsseldorf',
      country: 'DE',
    },
    {
      status: 'returned',
      sub_status: 'returned.refused',
      message: 'Returned to the sender',
      city: 'Rotterdam',
      country: 'NL',
    },
  ],
};

export interface Simulation {
  id: string;
  shipment_id: string;
  scenario: Scenario;
  /** How many checkpoints the walk adds in all. */
  steps: number;
  /** When the first (or next) checkpoint is due, on the service's clock. */
  next_step_at: string;
}

/**
 * POST /v1/shipments/{id}/simulate (test mode only): the worker walks the shipment through the
 * scenario, one checkpoint every SIMULATION_STEP_MS of the service's clock, with source
 * `simulation`. A new walk replaces one under way. A live shipment is 409 `shipment.live`.
 */
export async function startSimulation(
  ctx: AppContext,
  access: TenantAccess,
  shipmentId: string,
  scenario: Scenario,
): Promise<Simulation> {
  // Visible to the token first (404 otherwise, as for any shipment), then its mode.
  const shipment = await getShipment(ctx, access, shipmentId);
  if (shipment.livemode) {
    throw new AppError(
      'shipment.live',
      'Only a test shipment is simulated: use a test key and a test shipment',
    );
  }
  const now = ctx.clock.now();
  const nextAt = new Date(now.getTime() + SIMULATION_STEP_MS);
  const row = { tenant_id: access.tenantId, shipment_id: shipmentId, id: newId('sim'), scenario, step: 0 };
  await ctx.db
    .insertInto('shipment_simulations')
    .values({ ...row, next_at: nextAt, created_at: now })
    .onConflict((oc) =>
      oc.columns(['shipment_id', 'tenant_id']).doUpdateSet({
        id: row.id,
        scenario,
        step: 0,
        next_at: nextAt,
        created_at: now,
      }),
    )
    .execute();
  return {
    id: row.id,
    shipment_id: shipmentId,
    scenario,
    steps: WALKS[scenario].length,
    next_step_at: nextAt.toISOString(),
  };
}

/** Walks taken per run at most; the next run takes the rest. */
const BATCH = 200;

/**
 * Adds every due checkpoint of every walk (several, when the clock moved far), each in its own
 * transaction with the walk's step: its `external_id` (`{sim_id}-{step}`) makes a step repeated
 * after a crash change nothing. Answers how many checkpoints were added.
 */
export async function advanceSimulations(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now();
  const due = await ctx.db
    .selectFrom('shipment_simulations')
    .selectAll()
    .where('next_at', '<=', now)
    .orderBy('next_at')
    .limit(BATCH)
    .execute();
  let added = 0;
  for (const walk of due) {
    const steps = WALKS[walk.scenario as Scenario] ?? [];
    let step = walk.step;
    let at = walk.next_at;
    while (step < steps.length && at <= now) {
      const current = steps[step] as Step;
      const stepNumber = step;
      const occurredAt = at;
      const more = await ctx.db.transaction().execute(async (trx) => {
        const claimed = await trx
          .updateTable('shipment_simulations')
          .set({ step: stepNumber + 1, next_at: new Date(occurredAt.getTime() + SIMULATION_STEP_MS) })
          .where('tenant_id', '=', walk.tenant_id)
          .where('shipment_id', '=', walk.shipment_id)
          .where('id', '=', walk.id)
          .where('step', '=', stepNumber)
          .executeTakeFirst();
        // Another worker took this step, or a new walk replaced this one.
        if (Number(claimed.numUpdatedRows) === 0) return false;
        await applyCheckpointIn(ctx, trx, {
          tenantId: walk.tenant_id,
          mode: 'test',
          customerAccountId: null,
          shipmentId: walk.shipment_id,
          source: 'simulation',
          input: checkpointOf(current, walk.created_at, occurredAt, `${walk.id}-${stepNumber}`),
        });
        return true;
      });
      if (!more) break;
      added += 1;
      step += 1;
      at = new Date(at.getTime() + SIMULATION_STEP_MS);
    }
    if (step >= steps.length) {
      await ctx.db
        .deleteFrom('shipment_simulations')
        .where('tenant_id', '=', walk.tenant_id)
        .where('shipment_id', '=', walk.shipment_id)
        .where('id', '=', walk.id)
        .execute();
    }
  }
  if (added > 0) runAfterCommit(ctx);
  return added;
}

function checkpointOf(step: Step, startedAt: Date, occurredAt: Date, externalId: string) {
  const day = (days: number) => new Date(startedAt.getTime() + days * DAY + 18 * HOUR).toISOString();
  return {
    occurred_at: occurredAt.toISOString(),
    location: { city: step.city, country: step.country },
    message: step.message,
    status: step.status,
    sub_status: step.sub_status,
    external_id: externalId,
    ...(step.estimate
      ? {
          estimated_delivery: {
            earliest: day(step.estimate[0]),
            latest: day(step.estimate[1]),
            source: 'carrier' as const,
          },
        }
      : {}),
    ...(step.signedBy
      ? {
          proof_of_delivery: {
            method: 'signature' as const,
            signed_by: step.signedBy,
            received_at: occurredAt.toISOString(),
          },
        }
      : {}),
  };
}

export const simulationJob: BackgroundJob = {
  name: 'shipment-simulations',
  everyMs: SECOND,
  run: advanceSimulations,
};

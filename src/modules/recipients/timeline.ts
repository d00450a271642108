import type { AppContext } from '../../context.ts';

/** One line of the recipient's timeline: what the page shows, nothing more. */
export interface TimelineEntry {
  at: Date;
  /** The status the shipment reached, for the words of the line when there is no message. */
  status: string | null;
  message: string | null;
  city: string | null;
  country: string | null;
}

/** What the tracking page shows of a shipment (never who it is for, nor any id). */
export interface TrackingFacts {
  status: string;
  exceptionReason: string | null;
  subStatus: string | null;
  estimate: { earliest: Date; latest: Date } | null;
  deliveredBy: string | null;
  livemode: boolean;
  timeline: TimelineEntry[];
}

/** Where the page's facts come from: one function (`trackingSource` below). */
export type TrackingSource = (
  ctx: AppContext,
  shipment: { tenantId: string; shipmentId: string },
) => Promise<TrackingFacts | null>;

/**
 * The facts from the shipment and its status history (the event rows: the status each move
 * reached, and when), newest first, without places, estimate or signature: what
 * `checkpointSource` falls back on where no checkpoint speaks of a move.
 */
export const statusHistorySource: TrackingSource = async (ctx, { tenantId, shipmentId }) => {
  const shipment = await ctx.db
    .selectFrom('shipments')
    .select(['status', 'exception_reason', 'livemode', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', shipmentId)
    .executeTakeFirst();
  if (!shipment) return null;
  const events = await ctx.db
    .selectFrom('events')
    .select(['payload', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('shipment_id', '=', shipmentId)
    .where('type', 'in', ['shipment.created', 'shipment.status_changed'])
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(100)
    .execute();
  const timeline = events.map((event): TimelineEntry => {
    const data = (JSON.parse(event.payload) as { data?: { status?: unknown } }).data;
    return {
      at: event.created_at,
      status: typeof data?.status === 'string' ? data.status : null,
      message: null,
      city: null,
      country: null,
    };
  });
  return {
    status: shipment.status,
    exceptionReason: shipment.exception_reason,
    subStatus: null,
    estimate: null,
    deliveredBy: null,
    livemode: shipment.livemode,
    timeline,
  };
};

/** When the newest checkpoint of the shipment was told (its shipment.checkpoint_added). */
async function lastCheckpointTold(
  ctx: AppContext,
  { tenantId, shipmentId }: { tenantId: string; shipmentId: string },
): Promise<Date | null> {
  const row = await ctx.db
    .selectFrom('events')
    .select('created_at')
    .where('tenant_id', '=', tenantId)
    .where('shipment_id', '=', shipmentId)
    .where('type', '=', 'shipment.checkpoint_added')
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.created_at ?? null;
}

interface StoredLocation {
  city?: string | null;
  country?: string | null;
}

function parsed<T>(value: unknown): T | null {
  if (value === null || value === undefined) return null;
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/**
 * The facts from the tracking module: the shipment's sub-status, estimate and signature, and its
 * checkpoints newest first, each with its time, city and country only (never the postal code,
 * the coordinates or any id). Where no checkpoint tells of it, the status history fills in: the
 * creation, every move when there is no checkpoint, and the moves made after the newest one.
 */
export const checkpointSource: TrackingSource = async (ctx, target) => {
  const [facts, shipment, checkpoints] = await Promise.all([
    statusHistorySource(ctx, target),
    ctx.db
      .selectFrom('shipments')
      .select(['status', 'sub_status', 'estimated_delivery', 'proof_of_delivery'])
      .where('tenant_id', '=', target.tenantId)
      .where('id', '=', target.shipmentId)
      .executeTakeFirst(),
    ctx.db
      .selectFrom('shipment_checkpoints')
      .select(['occurred_at', 'location', 'message', 'status'])
      .where('tenant_id', '=', target.tenantId)
      .where('shipment_id', '=', target.shipmentId)
      .orderBy('occurred_at', 'desc')
      .orderBy('id', 'desc')
      .limit(100)
      .execute(),
  ]);
  if (!facts || !shipment) return null;
  const fromCheckpoints = checkpoints.map((checkpoint): TimelineEntry => {
    const location = parsed<StoredLocation>(checkpoint.location);
    return {
      at: checkpoint.occurred_at,
      status: checkpoint.status,
      message: checkpoint.message,
      city: location?.city ?? null,
      country: location?.country ?? null,
    };
  });
  // A checkpoint's moves are told by the checkpoint: its shipment.checkpoint_added is dated with
  // the last of them, and a move made later (POST /status) is dated after it. The creation stays.
  const told = checkpoints.length > 0 ? await lastCheckpointTold(ctx, target) : null;
  const moves = facts.timeline.filter(
    (entry, index) => told === null || entry.at > told || index === facts.timeline.length - 1,
  );
  const estimate = parsed<{ earliest: string; latest: string }>(shipment.estimated_delivery);
  const proof = parsed<{ signed_by?: string | null }>(shipment.proof_of_delivery);
  return {
    ...facts,
    subStatus: shipment.sub_status,
    estimate: estimate ? { earliest: new Date(estimate.earliest), latest: new Date(estimate.latest) } : null,
    deliveredBy: shipment.status === 'delivered' ? (proof?.signed_by ?? null) : null,
    timeline: [...fromCheckpoints, ...moves].sort((a, b) => b.at.getTime() - a.at.getTime()).slice(0, 100),
  };
};

/** The source the page reads: the checkpoints, with the status history where they are silent. */
export const trackingSource: TrackingSource = checkpointSource;

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

/** Where the page's facts come from: one function, to be pointed at checkpoints (issue Tracking). */
export type TrackingSource = (
  ctx: AppContext,
  shipment: { tenantId: string; shipmentId: string },
) => Promise<TrackingFacts | null>;

/**
 * The facts from the shipment and its status history (the event rows: the status each move
 * reached, and when), newest first. No places, estimate or signature are known yet: those come
 * with the tracking module's checkpoints, which replace this source (`trackingSource` below).
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

/** The source the page reads. When checkpoints land, point this at them. */
export const trackingSource: TrackingSource = statusHistorySource;

import type { RecordedEvent } from '../shipments/events.ts';
import { presentTrackedShipment, type TrackedShipment } from '../shipments/present.ts';
import type { ShipmentsTable } from '../shipments/tables.ts';
import { type EstimatedDelivery, fromJson, sameEstimate } from './fields.ts';

function about(row: ShipmentsTable, at: Date) {
  return {
    tenantId: row.tenant_id,
    livemode: row.livemode,
    customerAccountId: row.customer_account_id,
    shipmentId: row.id,
    createdAt: at,
    latestOnly: true,
  };
}

/**
 * shipment.eta_changed (2026-12-01 only) when the estimate really changed between two states of a
 * shipment, else null: `delayed` when the new latest is later than the old one.
 */
export function etaChangedEvent(
  before: ShipmentsTable,
  after: ShipmentsTable,
  at: Date,
  shown: TrackedShipment = presentTrackedShipment(after),
): RecordedEvent | null {
  const previous = fromJson<EstimatedDelivery>(before.estimated_delivery);
  const current = fromJson<EstimatedDelivery>(after.estimated_delivery);
  if (sameEstimate(previous, current)) return null;
  return {
    type: 'shipment.eta_changed',
    ...about(after, at),
    data: {
      estimated_delivery: current,
      previous_estimated_delivery: previous,
      delayed: previous !== null && current !== null && current.latest > previous.latest,
      shipment: shown,
    },
  };
}

/** shipment.checkpoint_added (2026-12-01 only); `shown` is `after` presented, when the caller has it. */
export function checkpointAddedEvent(
  after: ShipmentsTable,
  checkpoint: unknown,
  at: Date,
  shown: TrackedShipment = presentTrackedShipment(after),
): RecordedEvent {
  return {
    type: 'shipment.checkpoint_added',
    ...about(after, at),
    data: { checkpoint, shipment: shown },
  };
}

/** shipment.stalled (2026-12-01 only). */
export function stalledEvent(row: ShipmentsTable, since: Date, at: Date): RecordedEvent {
  return {
    type: 'shipment.stalled',
    ...about(row, at),
    data: { since: since.toISOString(), shipment: presentTrackedShipment(row) },
  };
}

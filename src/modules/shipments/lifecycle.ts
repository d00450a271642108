/** The shipment state machine (CONTRACT.md, Shipments). */
export const SHIPMENT_STATUSES = [
  'draft',
  'confirmed',
  'picked_up',
  'in_transit',
  'out_for_delivery',
  'delivered',
  'exception',
  'returned',
  'cancelled',
] as const;
export type ShipmentStatus = (typeof SHIPMENT_STATUSES)[number];

export const EXCEPTION_REASONS = ['lost', 'damaged', 'held'] as const;
export type ExceptionReason = (typeof EXCEPTION_REASONS)[number];

const MOVES: Record<ShipmentStatus, readonly ShipmentStatus[]> = {
  draft: ['confirmed', 'cancelled'],
  confirmed: ['picked_up', 'cancelled'],
  picked_up: ['in_transit', 'exception'],
  in_transit: ['out_for_delivery', 'exception'],
  out_for_delivery: ['delivered', 'exception'],
  exception: ['in_transit', 'out_for_delivery', 'returned'],
  delivered: [],
  returned: [],
  cancelled: [],
};

export function canMove(from: string, to: string): boolean {
  return (MOVES[from as ShipmentStatus] ?? []).includes(to as ShipmentStatus);
}

export function nextStatuses(from: string): readonly ShipmentStatus[] {
  return MOVES[from as ShipmentStatus] ?? [];
}

/** The event types a move emits: always status_changed, plus delivered or exception where they apply. */
export function eventTypesForMove(to: string): string[] {
  const types = ['shipment.status_changed'];
  if (to === 'delivered') types.push('shipment.delivered');
  if (to === 'exception') types.push('shipment.exception');
  return types;
}

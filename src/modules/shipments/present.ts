import type { Static } from 'typebox';
import {
  type Carrier,
  type Checkpoint,
  type Destination,
  type EstimatedDelivery,
  fromJson,
  type ProofOfDelivery,
} from '../tracking/fields.ts';
import type { ExceptionReason, ShipmentStatus } from './lifecycle.ts';
import type { ParcelSchema, ShipmentSchema, TrackedShipmentSchema } from './schemas.ts';
import type { ShipmentsTable } from './tables.ts';

export type Parcel = Static<typeof ParcelSchema>;

/** A shipment as GET /v1/shipments/{id} returns it, and as data.shipment carries it: its schema's type. */
export type Shipment = Static<typeof ShipmentSchema>;

/** A shipment of the latest shape (REST answers, event version 2026-12-01): Shipment and its tracking fields. */
export type TrackedShipment = Static<typeof TrackedShipmentSchema>;

export function presentShipment(row: ShipmentsTable): Shipment {
  const parcels = (typeof row.parcels === 'string' ? JSON.parse(row.parcels) : row.parcels) as Parcel[];
  return {
    id: row.id,
    tracking_number: row.tracking_number,
    status: row.status as ShipmentStatus,
    external_ref: row.external_ref,
    customer_account_id: row.customer_account_id,
    recipient_name: row.recipient_name,
    recipient_email: row.recipient_email,
    recipient_phone: row.recipient_phone,
    payment_mode: row.payment_mode as Shipment['payment_mode'],
    cod_amount_minor: row.cod_amount_minor === null ? null : Number(row.cod_amount_minor),
    currency: row.currency,
    parcels,
    livemode: row.livemode,
    exception_reason: row.exception_reason as ExceptionReason | null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The shipment of the latest shape: the 2026-11-01 fields first, in their order, then the tracking fields. */
export function presentTrackedShipment(row: ShipmentsTable): TrackedShipment {
  return {
    ...presentShipment(row),
    carrier: fromJson<Carrier>(row.carrier),
    carrier_tracking_number: row.carrier_tracking_number,
    destination: fromJson<Destination>(row.destination),
    sub_status: row.sub_status,
    estimated_delivery: fromJson<EstimatedDelivery>(row.estimated_delivery),
    proof_of_delivery: fromJson<ProofOfDelivery>(row.proof_of_delivery),
    latest_checkpoint: fromJson<Checkpoint>(row.latest_checkpoint),
  };
}

/** The shipment in the shape a Waybill-Version asks for: 2026-11-01 has no tracking fields. */
export function presentForVersion(shipment: TrackedShipment, version: string): Shipment | TrackedShipment {
  if (version !== '2026-11-01') return shipment;
  const {
    carrier: _carrier,
    carrier_tracking_number: _number,
    destination: _destination,
    sub_status: _sub,
    estimated_delivery: _estimate,
    proof_of_delivery: _proof,
    latest_checkpoint: _checkpoint,
    ...old
  } = shipment;
  return old;
}

import { Type } from 'typebox';
import { Nullable } from '../../http/schemas.ts';
import { CheckpointSchema, AnsweredEstimate as EstimatedDeliveryAnswer } from '../tracking/schemas.ts';
import type { EventDefinition, ExampleContext } from '../webhooks/event-schema.ts';
import { SHIPMENT_STATUSES, type ShipmentStatus } from './lifecycle.ts';
import { ShipmentSchema, TrackedShipmentSchema } from './schemas.ts';
import { presentShipment, presentTrackedShipment, type Shipment, type TrackedShipment } from './service.ts';
import type { ShipmentsTable } from './tables.ts';

const Status = (description: string) => Type.Enum(SHIPMENT_STATUSES, { type: 'string', description });

/** The data of every shipment event (spec 2.6): the event's own transition and the shipment. */
export const ShipmentEventData = Type.Object(
  {
    status: Status("The shipment's status after this event"),
    previous_status: Nullable(Status('The status before it'), {
      description: 'The status before this event; null on shipment.created',
    }),
    shipment: ShipmentSchema,
  },
  {
    $id: 'ShipmentEventData',
    additionalProperties: false,
    description: 'The transition (previous_status to status) and the shipment',
  },
);

/** The data of every status event from 2026-12-01 on: the tracked shipment and the checkpoint behind the move. */
export const TrackedShipmentEventData = Type.Object(
  {
    status: Status("The shipment's status after this event"),
    previous_status: Nullable(Status('The status before it'), {
      description: 'The status before this event; null on shipment.created',
    }),
    shipment: TrackedShipmentSchema,
    checkpoint: Nullable(CheckpointSchema, {
      description: 'The checkpoint that caused the move; null for a move made through the API',
    }),
  },
  {
    $id: 'TrackedShipmentEventData',
    additionalProperties: false,
    description: 'The transition (previous_status to status), the shipment and the checkpoint behind it',
  },
);

/** The example shipment of test messages and of the catalogue: the real GET /v1/shipments/{id} shape. */
export function exampleShipment(
  context: ExampleContext & { status: ShipmentStatus; exceptionReason?: string | null },
): Shipment {
  return presentShipment(exampleRow(context));
}

/** The example's row, made for the reader's mode, account and moment. */
function exampleRow(
  context: ExampleContext & { status: ShipmentStatus; exceptionReason?: string | null },
): ShipmentsTable {
  return {
    id: 'shp_example0000000000000000',
    tenant_id: '00000000-0000-4000-8000-000000000000',
    customer_account_id: context.customerAccountId,
    livemode: context.livemode,
    tracking_number: 'WBEXAMPLE0000001',
    status: context.status,
    external_ref: 'order-1001',
    recipient_name: 'Ada Lovelace',
    recipient_email: 'ada@example.com',
    recipient_phone: '+44 20 7946 0000',
    payment_mode: 'cod',
    cod_amount_minor: 4599,
    currency: 'EUR',
    parcels: [{ weight_grams: 1200, length_mm: 300, width_mm: 200, height_mm: 100, reference: 'box-1' }],
    exception_reason: context.exceptionReason ?? null,
    carrier: null,
    carrier_tracking_number: null,
    destination: null,
    sub_status: null,
    estimated_delivery: null,
    proof_of_delivery: null,
    latest_checkpoint: null,
    latest_checkpoint_at: null,
    activity_at: null,
    stall_reported_at: null,
    created_at: new Date(context.at.getTime() - 2 * 60 * 60 * 1000),
    updated_at: context.at,
  };
}

const EXAMPLE_CHECKPOINT = (context: ExampleContext, status: ShipmentStatus | null) => ({
  id: 'chk_example0000000000000000',
  shipment_id: 'shp_example0000000000000000',
  occurred_at: new Date(context.at.getTime() - 60_000).toISOString(),
  location: {
    city: 'Leipzig',
    region: 'Saxony',
    postal_code: '04109',
    country: 'DE',
    lat: 51.34,
    lng: 12.37,
  },
  message: 'Departed the hub',
  status,
  sub_status: null,
  estimated_delivery: null,
  source: 'api' as const,
  external_id: 'scan-0001',
  applied: true,
  created_at: context.at.toISOString(),
});

/** The example shipment of 2026-12-01: the same, with its tracking fields. */
export function exampleTrackedShipment(
  context: ExampleContext & { status: ShipmentStatus; exceptionReason?: string | null },
): TrackedShipment {
  return {
    ...presentTrackedShipment({
      ...exampleRow(context),
      carrier: { code: 'dhl', name: 'DHL' },
      carrier_tracking_number: 'JD014600000000000001',
      destination: {
        line1: '1 Example Street',
        city: 'Berlin',
        region: null,
        postal_code: '10115',
        country: 'DE',
      },
      estimated_delivery: {
        earliest: new Date(context.at.getTime() + 86_400_000).toISOString(),
        latest: new Date(context.at.getTime() + 2 * 86_400_000).toISOString(),
        source: 'carrier',
      },
      latest_checkpoint: EXAMPLE_CHECKPOINT(context, context.status),
    }),
  };
}

function shipmentEvent<T extends string>(
  type: T,
  description: string,
  move: { status: ShipmentStatus; previous: ShipmentStatus | null; exceptionReason?: string },
): EventDefinition<T> {
  return {
    type,
    sentTo: 'webhook_endpoints',
    description,
    data: ShipmentEventData,
    example: (context) => ({
      status: move.status,
      previous_status: move.previous,
      shipment: exampleShipment({ ...context, status: move.status, exceptionReason: move.exceptionReason }),
    }),
    latest: {
      data: TrackedShipmentEventData,
      example: (context) => ({
        status: move.status,
        previous_status: move.previous,
        shipment: exampleTrackedShipment({
          ...context,
          status: move.status,
          exceptionReason: move.exceptionReason,
        }),
        checkpoint: move.previous === null ? null : EXAMPLE_CHECKPOINT(context, move.status),
      }),
    },
  };
}

const TrackedShipmentOnly = { shipment: TrackedShipmentSchema };

/** The types of 2026-12-01 only (CONTRACT.md, Tracking). */
export const TRACKING_EVENTS: readonly EventDefinition[] = [
  {
    type: 'shipment.checkpoint_added',
    sentTo: 'webhook_endpoints',
    since: '2026-12-01',
    description:
      "A checkpoint joined the shipment's timeline (applied or not; data.checkpoint.applied says). A move it caused is also sent as shipment.status_changed.",
    data: Type.Object(
      { checkpoint: CheckpointSchema, ...TrackedShipmentOnly },
      {
        $id: 'CheckpointAddedData',
        additionalProperties: false,
        description: 'The checkpoint and the shipment after it',
      },
    ),
    example: (context) => ({
      checkpoint: EXAMPLE_CHECKPOINT(context, 'in_transit'),
      shipment: exampleTrackedShipment({ ...context, status: 'in_transit' }),
    }),
  },
  {
    type: 'shipment.eta_changed',
    sentTo: 'webhook_endpoints',
    since: '2026-12-01',
    description:
      'The estimated delivery really changed. data.delayed is true when the new latest is later than the old one.',
    data: Type.Object(
      {
        estimated_delivery: Nullable(EstimatedDeliveryAnswer),
        previous_estimated_delivery: Nullable(EstimatedDeliveryAnswer),
        delayed: Type.Boolean({ description: 'The new latest is later than the previous latest' }),
        ...TrackedShipmentOnly,
      },
      { $id: 'EtaChangedData', additionalProperties: false, description: 'The estimate before and after' },
    ),
    example: (context) => {
      const shipment = exampleTrackedShipment({ ...context, status: 'in_transit' });
      const estimate = shipment.estimated_delivery as { earliest: string; latest: string; source: 'carrier' };
      return {
        estimated_delivery: estimate,
        previous_estimated_delivery: { ...estimate, latest: estimate.earliest },
        delayed: true,
        shipment,
      };
    },
  },
  {
    type: 'shipment.stalled',
    sentTo: 'webhook_endpoints',
    since: '2026-12-01',
    description:
      "A shipment not final had no checkpoint or move for the company's stall_after_hours (default 72). Once per stall.",
    data: Type.Object(
      {
        since: Type.String({ format: 'date-time', description: 'The last checkpoint or move' }),
        ...TrackedShipmentOnly,
      },
      { $id: 'StalledData', additionalProperties: false, description: 'Since when, and the shipment' },
    ),
    example: (context) => ({
      since: new Date(context.at.getTime() - 72 * 3_600_000).toISOString(),
      shipment: exampleTrackedShipment({ ...context, status: 'in_transit' }),
    }),
  },
];

/** The shipment events (spec section 6), as the catalogue lists them. */
export const SHIPMENT_EVENTS = [
  shipmentEvent(
    'shipment.created',
    'A shipment was created, as a draft or confirmed. data.previous_status is null.',
    { status: 'confirmed', previous: null },
  ),
  shipmentEvent(
    'shipment.status_changed',
    "A shipment's status changed from data.previous_status to data.status.",
    { status: 'in_transit', previous: 'picked_up' },
  ),
  shipmentEvent('shipment.delivered', 'A shipment was delivered. Also sent as shipment.status_changed.', {
    status: 'delivered',
    previous: 'out_for_delivery',
  }),
  shipmentEvent(
    'shipment.exception',
    'A shipment went to exception (exception_reason lost, damaged or held). Also sent as shipment.status_changed.',
    { status: 'exception', previous: 'in_transit', exceptionReason: 'damaged' },
  ),
] as const;

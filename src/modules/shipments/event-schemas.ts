import { Type } from 'typebox';
import { Nullable } from '../../http/schemas.ts';
import type { EventDefinition, ExampleContext } from '../webhooks/event-schema.ts';
import { SHIPMENT_STATUSES, type ShipmentStatus } from './lifecycle.ts';
import { ShipmentSchema } from './schemas.ts';
import { presentShipment, type Shipment } from './service.ts';

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

/** The example shipment of test messages and of the catalogue: the real GET /v1/shipments/{id} shape. */
export function exampleShipment(
  context: ExampleContext & { status: ShipmentStatus; exceptionReason?: string | null },
): Shipment {
  return presentShipment({
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
  });
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
  };
}

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

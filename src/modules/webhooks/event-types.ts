import { newId } from '../../lib/ids.ts';
import { buildEnvelope } from '../shipments/events.ts';
import { presentShipment, type Shipment } from '../shipments/service.ts';

/** The shipment event catalogue an endpoint subscribes to (spec section 6). */
export const EVENT_TYPES = [
  'shipment.created',
  'shipment.status_changed',
  'shipment.delivered',
  'shipment.exception',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

interface Example {
  description: string;
  status: string;
  previousStatus: string | null;
  exceptionReason: string | null;
}

const CATALOGUE: Record<EventType, Example> = {
  'shipment.created': {
    description: 'A shipment was created, as a draft or confirmed. data.previous_status is null.',
    status: 'confirmed',
    previousStatus: null,
    exceptionReason: null,
  },
  'shipment.status_changed': {
    description: "A shipment's status changed from data.previous_status to data.status.",
    status: 'in_transit',
    previousStatus: 'picked_up',
    exceptionReason: null,
  },
  'shipment.delivered': {
    description: 'A shipment was delivered. Also sent as shipment.status_changed.',
    status: 'delivered',
    previousStatus: 'out_for_delivery',
    exceptionReason: null,
  },
  'shipment.exception': {
    description:
      'A shipment went to exception (exception_reason lost, damaged or held). Also sent as shipment.status_changed.',
    status: 'exception',
    previousStatus: 'in_transit',
    exceptionReason: 'damaged',
  },
};

/** The example shipment of test messages and of the catalogue: the real GET /v1/shipments/{id} shape. */
export function exampleShipment(options: {
  livemode: boolean;
  customerAccountId: string | null;
  status: string;
  exceptionReason?: string | null;
  at: Date;
}): Shipment {
  const createdAt = new Date(options.at.getTime() - 2 * 60 * 60 * 1000);
  return presentShipment({
    id: 'shp_example0000000000000000',
    tenant_id: '00000000-0000-4000-8000-000000000000',
    customer_account_id: options.customerAccountId,
    livemode: options.livemode,
    tracking_number: 'WBEXAMPLE0000001',
    status: options.status,
    external_ref: 'order-1001',
    recipient_name: 'Ada Lovelace',
    recipient_email: 'ada@example.com',
    recipient_phone: '+44 20 7946 0000',
    payment_mode: 'cod',
    cod_amount_minor: 4599,
    currency: 'EUR',
    parcels: [{ weight_grams: 1200, length_mm: 300, width_mm: 200, height_mm: 100, reference: 'box-1' }],
    exception_reason: options.exceptionReason ?? null,
    created_at: createdAt,
    updated_at: options.at,
  });
}

/** A full spec 2.6 envelope of the type with an example shipment, serialised as it would be sent. */
export function exampleEnvelope(options: {
  type: EventType;
  tenantId: string;
  livemode: boolean;
  customerAccountId: string | null;
  at: Date;
  test?: boolean;
  id?: string;
}): string {
  const example = CATALOGUE[options.type];
  const shipment = exampleShipment({
    livemode: options.livemode,
    customerAccountId: options.customerAccountId,
    status: example.status,
    exceptionReason: example.exceptionReason,
    at: options.at,
  });
  return buildEnvelope({
    id: options.id ?? newId('evt'),
    type: options.type,
    tenantId: options.tenantId,
    livemode: options.livemode,
    createdAt: options.at,
    ...(options.test ? { test: true } : {}),
    data: { status: example.status, previous_status: example.previousStatus, shipment },
  });
}

export interface EventTypeDescription {
  type: EventType;
  description: string;
  example: unknown;
}

/** GET /v1/webhook-event-types: every type with what it means and an example message body. */
export function listEventTypes(options: { tenantId: string; livemode: boolean; at: Date }): {
  data: EventTypeDescription[];
} {
  return {
    data: EVENT_TYPES.map((type) => ({
      type,
      description: CATALOGUE[type].description,
      example: JSON.parse(
        exampleEnvelope({
          type,
          tenantId: options.tenantId,
          livemode: options.livemode,
          customerAccountId: null,
          at: options.at,
        }),
      ),
    })),
  };
}

import { Type } from 'typebox';
import { Id, Nullable, PrefixedId, Timestamp } from '../../http/schemas.ts';
import {
  AnsweredDestination,
  AnsweredEstimate,
  AnsweredProof,
  CarrierSchema,
  CheckpointSchema,
  TrackingFieldsBody,
} from '../tracking/schemas.ts';
import { EXCEPTION_REASONS, SHIPMENT_STATUSES } from './lifecycle.ts';

const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength });
const Millimetres = Type.Integer({ minimum: 1, maximum: 100_000 });

export const ParcelSchema = Type.Object(
  {
    weight_grams: Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'Weight in grams' }),
    length_mm: Type.Optional(Nullable(Millimetres, { description: 'Length in millimetres' })),
    width_mm: Type.Optional(Nullable(Millimetres, { description: 'Width in millimetres' })),
    height_mm: Type.Optional(Nullable(Millimetres, { description: 'Height in millimetres' })),
    reference: Type.Optional(Nullable(Text(100), { description: "The merchant's own label for the parcel" })),
  },
  { additionalProperties: false, $id: 'Parcel', description: 'One parcel of a shipment' },
);

export const StatusName = Type.Union(SHIPMENT_STATUSES.map((s) => Type.Literal(s)));
export const ExceptionReasonName = Type.Union(EXCEPTION_REASONS.map((s) => Type.Literal(s)));

export const CreateShipmentBody = Type.Object(
  {
    recipient_name: Text(200),
    recipient_email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
    recipient_phone: Type.Optional(
      Nullable(Type.String({ pattern: '^\\+?[0-9 ()./-]{3,30}$', maxLength: 32 })),
    ),
    external_ref: Type.Optional(Nullable(Text(100))),
    customer_account_id: Type.Optional(Nullable(Id(64))),
    payment_mode: Type.Optional(Type.Union([Type.Literal('prepaid'), Type.Literal('cod')])),
    cod_amount_minor: Type.Optional(
      Nullable(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000, description: 'Minor currency units' })),
    ),
    currency: Type.String({
      pattern: '^[A-Za-z]{3}$',
      maxLength: 3,
      description: 'ISO 4217 code (any case)',
    }),
    parcels: Type.Optional(Type.Array(ParcelSchema, { maxItems: 50 })),
    status: Type.Optional(
      Type.Union([Type.Literal('draft'), Type.Literal('confirmed')], { default: 'confirmed' }),
    ),
    ...TrackingFieldsBody,
  },
  { additionalProperties: false },
);

/**
 * A shipment as GET /v1/shipments/{id} answers it, and the one definition of `data.shipment` in
 * shipment events (spec 2.6): strict, so that a field the service adds without it fails the tests.
 */
export const ShipmentSchema = Type.Object(
  {
    id: PrefixedId('shp', 'The shipment id'),
    tracking_number: Type.String({ minLength: 1, description: 'The tracking number Waybill gave it' }),
    status: Type.Enum(SHIPMENT_STATUSES, { type: 'string', description: 'Where the shipment is now' }),
    external_ref: Nullable(Type.String(), {
      description: "The merchant's own reference, such as an order number",
    }),
    customer_account_id: Nullable(PrefixedId('acct', 'A merchant account id'), {
      description: 'The merchant account (acct_) the shipment belongs to; null for the company itself',
    }),
    recipient_name: Type.String({ description: "The recipient's name ([redacted] after an erasure)" }),
    recipient_email: Nullable(Type.String(), { description: "The recipient's e-mail address" }),
    recipient_phone: Nullable(Type.String(), { description: "The recipient's phone number" }),
    payment_mode: Type.Enum(['prepaid', 'cod'], {
      type: 'string',
      description: 'prepaid, or cod: cash on delivery of cod_amount_minor',
    }),
    cod_amount_minor: Nullable(Type.Integer({ minimum: 0 }), {
      description: 'The amount to collect on delivery, in minor units of currency; null when prepaid',
    }),
    currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 currency code' }),
    parcels: Type.Array(ParcelSchema, { description: 'The parcels, in the order given' }),
    livemode: Type.Boolean({ description: 'false for a sandbox (test) shipment' }),
    exception_reason: Nullable(Type.Enum(EXCEPTION_REASONS, { type: 'string' }), {
      description: 'lost, damaged or held while the status is exception; otherwise null',
    }),
    created_at: Type.String({ format: 'date-time', description: 'When it was created' }),
    updated_at: Type.String({
      format: 'date-time',
      description: 'When it last changed: compare it to order the messages about one shipment',
    }),
  },
  {
    $id: 'Shipment',
    additionalProperties: false,
    description: 'A shipment, as GET /v1/shipments/{id} answers it at the moment the message is built',
  },
);

/** The shipment of the latest API shape (event version 2026-12-01): the 2026-11-01 shape and the tracking fields. */
export const TrackedShipmentSchema = Type.Object(
  {
    ...ShipmentSchema.properties,
    carrier: Nullable(CarrierSchema),
    carrier_tracking_number: Nullable(Type.String()),
    destination: Nullable(AnsweredDestination),
    sub_status: Nullable(Type.String(), { description: 'A code of GET /v1/shipment-sub-statuses, or null' }),
    estimated_delivery: Nullable(AnsweredEstimate),
    proof_of_delivery: Nullable(AnsweredProof),
    latest_checkpoint: Nullable(CheckpointSchema),
  },
  {
    $id: 'TrackedShipment',
    additionalProperties: false,
    description:
      'A shipment as GET /v1/shipments/{id} answers it (Waybill-Version 2026-12-01, the latest); 2026-11-01 lacks the tracking fields',
  },
);

/**
 * A shipment as the REST API answers it (the latest version): the tracked shipment and its
 * `tracking_url` (issue 52), which the event messages do not carry.
 */
export const ShipmentResource = Type.Object(
  {
    ...TrackedShipmentSchema.properties,
    tracking_url: Type.String({
      format: 'uri',
      description:
        "The recipient's public tracking page, {web_url}/t/{token}; the token is random, and a rotation or an erasure replaces it",
    }),
  },
  {
    $id: 'ShipmentResource',
    additionalProperties: false,
    description: 'A shipment, as the API answers it (Waybill-Version 2026-12-01, the latest)',
  },
);

export const MoveShipmentBody = Type.Object(
  { status: StatusName, exception_reason: Type.Optional(Nullable(ExceptionReasonName)) },
  { additionalProperties: false },
);

export const EventSchema = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    shipment_id: Nullable(Type.String()),
    livemode: Type.Boolean(),
    created_at: Timestamp,
    payload: Type.String({ description: 'The envelope exactly as sent to webhook endpoints' }),
  },
  { $id: 'Event' },
);

/** POST /v1/shipments/{id}/checkpoints answers it. */
export const CheckpointAnswer = Type.Object(
  { checkpoint: CheckpointSchema, shipment: TrackedShipmentSchema, applied: Type.Boolean() },
  { additionalProperties: false },
);

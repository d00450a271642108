import { Type } from 'typebox';
import { Nullable, PrefixedId, Timestamp } from '../../http/schemas.ts';
import { SHIPMENT_STATUSES } from '../shipments/lifecycle.ts';

/**
 * The tracking fields (CONTRACT.md, Tracking). The shapes are checked here (400 validation.failed);
 * what a shape cannot say (a country that ISO 3166-1 lacks, a sub-status of another status, an
 * estimate that ends before it begins, a message over 500 characters) is a 422 from fields.ts.
 */
const Text = (maxLength: number, description?: string) =>
  Type.String({ minLength: 1, maxLength, ...(description ? { description } : {}) });
const Country = Type.String({
  pattern: '^[A-Za-z]{2}$',
  description: 'ISO 3166-1 alpha-2 country code (any case; answered upper case)',
});
const Status = Type.Enum(SHIPMENT_STATUSES, { type: 'string' });

export const CarrierSchema = Type.Object(
  {
    code: Type.String({
      pattern: '^[a-z0-9-]{2,32}$',
      description: 'Lowercase carrier code, such as dhl, ups or city-courier',
    }),
    name: Text(100, "The carrier's name as shown to people"),
  },
  { additionalProperties: false, description: 'The carrier that moves the shipment' },
);

export const CarrierTrackingNumber = Type.String({
  pattern: '^[\\x21-\\x7E]{1,64}$',
  description: "The carrier's own tracking number (1 to 64 printable characters)",
});

export const DestinationSchema = Type.Object(
  {
    line1: Type.Optional(
      Nullable(Text(200), {
        description: "Street and number: the recipient's personal data, erased with the name",
      }),
    ),
    city: Type.Optional(Nullable(Text(100))),
    region: Type.Optional(Nullable(Text(100))),
    postal_code: Type.Optional(Nullable(Text(20))),
    country: Country,
  },
  { additionalProperties: false, description: 'Where the shipment goes' },
);

export const LocationSchema = Type.Object(
  {
    city: Type.Optional(Nullable(Text(100))),
    region: Type.Optional(Nullable(Text(100))),
    postal_code: Type.Optional(Nullable(Text(20))),
    country: Type.Optional(Nullable(Country)),
    lat: Type.Optional(Nullable(Type.Number({ minimum: -90, maximum: 90 }))),
    lng: Type.Optional(Nullable(Type.Number({ minimum: -180, maximum: 180 }))),
  },
  { additionalProperties: false, description: 'Where a checkpoint happened' },
);

export const EstimatedDeliverySchema = Type.Object(
  {
    earliest: Type.String({ format: 'date-time', description: 'The window opens (earliest <= latest)' }),
    latest: Type.String({ format: 'date-time', description: 'The window closes' }),
    source: Type.Enum(['carrier', 'company'], { type: 'string', description: 'Who estimated it' }),
  },
  { additionalProperties: false, description: 'When the shipment should arrive' },
);

export const ProofOfDeliverySchema = Type.Object(
  {
    method: Type.Enum(['signature', 'photo', 'pin', 'none'], { type: 'string' }),
    signed_by: Type.Optional(Nullable(Text(200), { description: 'Who signed or took the parcel' })),
    received_at: Type.String({ format: 'date-time', description: 'When the parcel was handed over' }),
  },
  {
    additionalProperties: false,
    description: 'How the delivery was proven; set with (or after) the move to delivered',
  },
);

/** The answered shapes: every field present, null when not known. */
export const AnsweredDestination = Type.Object(
  {
    line1: Nullable(Type.String()),
    city: Nullable(Type.String()),
    region: Nullable(Type.String()),
    postal_code: Nullable(Type.String()),
    country: Type.String({ pattern: '^[A-Z]{2}$' }),
  },
  { additionalProperties: false, description: 'Where the shipment goes' },
);

const AnsweredLocation = Type.Object(
  {
    city: Nullable(Type.String()),
    region: Nullable(Type.String()),
    postal_code: Nullable(Type.String()),
    country: Nullable(Type.String({ pattern: '^[A-Z]{2}$' })),
    lat: Nullable(Type.Number()),
    lng: Nullable(Type.Number()),
  },
  { additionalProperties: false, description: 'Where a checkpoint happened' },
);

export const AnsweredEstimate = Type.Object(
  { earliest: Timestamp, latest: Timestamp, source: Type.Enum(['carrier', 'company'], { type: 'string' }) },
  { additionalProperties: false, description: 'When it should arrive' },
);

export const AnsweredProof = Type.Object(
  {
    method: Type.Enum(['signature', 'photo', 'pin', 'none'], { type: 'string' }),
    signed_by: Nullable(Type.String()),
    received_at: Timestamp,
  },
  { additionalProperties: false, description: 'How the delivery was proven' },
);

export const CHECKPOINT_SOURCES = ['api', 'inbound', 'dashboard', 'simulation'] as const;
export type CheckpointSource = (typeof CHECKPOINT_SOURCES)[number];

export const CheckpointSchema = Type.Object(
  {
    id: PrefixedId('chk', 'The checkpoint id'),
    shipment_id: PrefixedId('shp', 'The shipment'),
    occurred_at: Type.String({ format: 'date-time', description: 'When it happened (UTC)' }),
    location: Nullable(AnsweredLocation),
    message: Type.String({ description: 'What the carrier said' }),
    status: Nullable(Status, { description: 'The status it reported, or null' }),
    sub_status: Nullable(Type.String(), { description: 'A code of GET /v1/shipment-sub-statuses, or null' }),
    estimated_delivery: Nullable(AnsweredEstimate),
    source: Type.Enum(CHECKPOINT_SOURCES, { type: 'string', description: 'Where it came from' }),
    external_id: Nullable(Type.String(), { description: "The sender's id for it (one per shipment)" }),
    applied: Type.Boolean({
      description: 'false when it was older than the newest checkpoint or would have moved the status back',
    }),
    created_at: Timestamp,
  },
  { additionalProperties: false, description: 'One entry of a shipment’s timeline' },
);

/** The writable tracking fields, on create and PATCH. */
export const TrackingFieldsBody = {
  carrier: Type.Optional(Nullable(CarrierSchema)),
  carrier_tracking_number: Type.Optional(Nullable(CarrierTrackingNumber)),
  destination: Type.Optional(Nullable(DestinationSchema)),
  sub_status: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
  estimated_delivery: Type.Optional(Nullable(EstimatedDeliverySchema)),
};

export const PatchShipmentBody = Type.Object(
  { ...TrackingFieldsBody, proof_of_delivery: Type.Optional(Nullable(ProofOfDeliverySchema)) },
  { additionalProperties: false },
);

export const CheckpointBody = Type.Object(
  {
    occurred_at: Type.String({ format: 'date-time', description: 'When it happened, with an offset or Z' }),
    location: Type.Optional(Nullable(LocationSchema)),
    message: Type.String({
      minLength: 1,
      maxLength: 10_000,
      description: 'What happened: 1 to 500 characters',
    }),
    status: Type.Optional(Nullable(Status)),
    sub_status: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
    estimated_delivery: Type.Optional(Nullable(EstimatedDeliverySchema)),
    proof_of_delivery: Type.Optional(Nullable(ProofOfDeliverySchema)),
    external_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 128 }))),
  },
  { additionalProperties: false },
);

export const SubStatusSchema = Type.Object(
  {
    code: Type.String(),
    status: Status,
    description: Type.String(),
  },
  { additionalProperties: false, $id: 'SubStatus' },
);

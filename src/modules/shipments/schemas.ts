import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../http/schemas.ts';
import { EXCEPTION_REASONS, SHIPMENT_STATUSES } from './lifecycle.ts';

const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength });
const Millimetres = Type.Integer({ minimum: 1, maximum: 100_000 });

export const ParcelSchema = Type.Object(
  {
    weight_grams: Type.Integer({ minimum: 1, maximum: 10_000_000 }),
    length_mm: Type.Optional(Nullable(Millimetres)),
    width_mm: Type.Optional(Nullable(Millimetres)),
    height_mm: Type.Optional(Nullable(Millimetres)),
    reference: Type.Optional(Nullable(Text(100))),
  },
  { additionalProperties: false, $id: 'Parcel' },
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
  },
  { additionalProperties: false },
);

export const ShipmentSchema = Type.Object(
  {
    id: Type.String(),
    tracking_number: Type.String(),
    status: Type.String(),
    external_ref: Nullable(Type.String()),
    customer_account_id: Nullable(Type.String()),
    recipient_name: Type.String(),
    recipient_email: Nullable(Type.String()),
    recipient_phone: Nullable(Type.String()),
    payment_mode: Type.String(),
    cod_amount_minor: Nullable(Type.Integer()),
    currency: Type.String(),
    parcels: Type.Array(
      Type.Object({
        weight_grams: Type.Integer(),
        length_mm: Type.Optional(Nullable(Type.Integer())),
        width_mm: Type.Optional(Nullable(Type.Integer())),
        height_mm: Type.Optional(Nullable(Type.Integer())),
        reference: Type.Optional(Nullable(Type.String())),
      }),
    ),
    livemode: Type.Boolean(),
    exception_reason: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Shipment' },
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

import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../http/schemas.ts';
import { CheckpointBody } from '../tracking/schemas.ts';
import { MAX_CHECKPOINTS } from './receive.ts';

export const SourceIdParams = Type.Object({ id: Id(64) }, { additionalProperties: false });
export const MessageIdParams = Type.Object(
  { id: Id(64), message_id: Id(64) },
  { additionalProperties: false },
);

const Name = Type.String({ minLength: 1, maxLength: 100 });
const CarrierCode = Type.String({
  minLength: 2,
  maxLength: 32,
  description: 'The carrier this source speaks for: lowercase `[a-z0-9-]{2,32}`, e.g. `dhl`, `city-courier`',
});
const Mode = Type.Union([Type.Literal('live'), Type.Literal('test')]);

export const CreateSourceBody = Type.Object(
  {
    name: Name,
    carrier_code: CarrierCode,
    mode: Type.Optional(Mode),
    customer_account_id: Type.Optional(Nullable(Id(64))),
  },
  { additionalProperties: false },
);

export const UpdateSourceBody = Type.Object(
  { name: Type.Optional(Name), carrier_code: Type.Optional(CarrierCode) },
  { additionalProperties: false },
);

export const SourceSchema = Type.Object(
  {
    id: Type.String({ description: '`ins_...`' }),
    name: Type.String(),
    carrier_code: Type.String(),
    mode: Mode,
    livemode: Type.Boolean(),
    customer_account_id: Nullable(Type.String(), {
      description: 'The merchant account whose shipments it reaches; null: the whole company',
    }),
    url: Type.String({ description: 'Where the carrier POSTs signed batches: `{base_url}/inbound/{id}`' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'InboundSource' },
);

export const SourceWithSecretSchema = Type.Object(
  {
    ...SourceSchema.properties,
    secret: Type.String({ description: 'The signing secret, whsec_ + base64 of 32 bytes; shown once' }),
  },
  { $id: 'InboundSourceWithSecret' },
);

export const SourceSecretSchema = Type.Object({
  secret: Type.String({ description: 'whsec_ followed by the base64 of 32 bytes' }),
});

const Outcome = Type.Union([
  Type.Literal('applied'),
  Type.Literal('not_applied'),
  Type.Literal('duplicate'),
  Type.Literal('unmatched'),
]);

export const InboundMessageSchema = Type.Object(
  {
    id: Type.String({ description: '`inm_...`' }),
    source_id: Type.String(),
    webhook_id: Nullable(Type.String()),
    received_at: Timestamp,
    status: Type.Union([
      Type.Literal('applied'),
      Type.Literal('duplicate'),
      Type.Literal('partly_applied'),
      Type.Literal('rejected'),
    ]),
    reason: Nullable(Type.String()),
    results: Type.Array(
      Type.Object({
        index: Type.Integer({ minimum: 0 }),
        shipment_id: Nullable(Type.String()),
        checkpoint_id: Nullable(Type.String()),
        outcome: Outcome,
      }),
    ),
  },
  { $id: 'InboundMessage' },
);

const ShipmentNumber = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

/** One checkpoint of a carrier's batch: the shipment's number, then what POST .../checkpoints takes. */
const InboundCheckpointSchema = Type.Object(
  {
    tracking_number: Type.Optional(ShipmentNumber("Waybill's tracking number of the shipment")),
    carrier_tracking_number: Type.Optional(
      Number("The carrier's own number (the shipment's carrier_tracking_number)"),
    ),
    ...CheckpointBody.properties,
  },
  { additionalProperties: false, description: 'tracking_number or carrier_tracking_number is required' },
);

export const InboundBody = Type.Object(
  { checkpoints: Type.Array(InboundCheckpointSchema, { minItems: 1, maxItems: MAX_CHECKPOINTS }) },
  { additionalProperties: false },
);

export const ReceiveAnswerSchema = Type.Object({
  accepted: Type.Integer({ description: 'Checkpoints that joined a timeline (moving the shipment or not)' }),
  duplicates: Type.Integer({
    description: 'Checkpoints already received (their external_id, or the whole message by webhook-id)',
  }),
  unmatched: Type.Integer({ description: "Checkpoints whose number matches none of the source's shipments" }),
});

import { Type } from 'typebox';
import { Id, Nullable } from '../../../http/schemas.ts';
import { AppSchema } from '../../apps/schemas.ts';
import { MediaSetSchema } from '../media/schemas.ts';
import { ListingSchema, SubmissionSchema, SubmissionStatusSchema } from '../submissions/schemas.ts';

const strict = { additionalProperties: false } as const;

export const SubmissionIdParams = Type.Object({ id: Id(64) }, strict);

export const QueueQuery = Type.Object(
  {
    status: Type.Optional(SubmissionStatusSchema),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ maxLength: 512 })),
  },
  strict,
);

export const QueueItemSchema = Type.Object({
  ...SubmissionSchema.properties,
  app_name: Type.String(),
  developer_email: Type.String(),
});

const LiveValuesSchema = Type.Object({
  name: Type.String(),
  description: Type.String(),
  homepage_url: Nullable(Type.String()),
  privacy_url: Nullable(Type.String()),
  support_url: Nullable(Type.String()),
  redirect_uris: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
  events_url: Nullable(Type.String()),
  status: AppSchema.properties.status,
});

export const ReviewedSubmissionSchema = Type.Object({
  ...SubmissionSchema.properties,
  developer: Type.Object({ id: Type.String(), email: Type.String(), name: Type.String() }),
  live: LiveValuesSchema,
  live_listing: Nullable(ListingSchema),
  live_media: MediaSetSchema,
  changes: Type.Array(Type.String(), {
    description: 'Fields whose submitted value differs from the live one',
  }),
  conflict: Nullable(
    Type.String({ description: 'Why you may not review it (your own app or company), or null' }),
  ),
});

export const DecisionBody = Type.Object(
  {
    decision: Type.Union([
      Type.Literal('approved'),
      Type.Literal('rejected'),
      Type.Literal('changes_requested'),
    ]),
    note: Type.Optional(
      Nullable(
        Type.String({ maxLength: 4000, description: 'Required unless approved; the developer reads it' }),
      ),
    ),
  },
  strict,
);

import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../../http/schemas.ts';

const strict = { additionalProperties: false } as const;

export const ReviewSchema = Type.Object(
  {
    id: Type.String(),
    app_id: Type.String(),
    rating: Type.Integer({ minimum: 1, maximum: 5 }),
    body: Type.String(),
    company_name: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
    reply: Nullable(Type.Object({ body: Type.String(), created_at: Timestamp, updated_at: Timestamp }), {
      description: "The developer's answer",
    }),
    hidden: Type.Boolean({
      description: 'Hidden by a reviewer: shown only to its company and the developer, with the reason',
    }),
    hidden_reason: Nullable(Type.String()),
    hidden_at: Nullable(Timestamp),
    mine: Type.Boolean({ description: 'Written by a company where you are an owner or admin' }),
  },
  { $id: 'Review' },
);

export const ReviewBody = Type.Object(
  {
    rating: Type.Integer({ minimum: 1, maximum: 5 }),
    body: Type.String({ maxLength: 8000, description: '1 to 2,000 characters' }),
    tenant_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'The company that reviews (needed only when several of yours may)',
      }),
    ),
  },
  strict,
);

export const ReviewPatchBody = Type.Object(
  {
    rating: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
    body: Type.Optional(Type.String({ maxLength: 8000, description: '1 to 2,000 characters' })),
  },
  strict,
);

export const ReplyBody = Type.Object(
  { body: Type.String({ maxLength: 8000, description: '1 to 2,000 characters' }) },
  strict,
);

export const HideBody = Type.Object(
  {
    reason: Type.String({
      maxLength: 2000,
      description: 'Why (1 to 500 characters); the developer and the company read it',
    }),
  },
  strict,
);

export const AppReviewParams = Type.Object({ id: Id(64), review_id: Id(64) }, strict);
export const ReviewIdParams = Type.Object({ review_id: Id(64) }, strict);

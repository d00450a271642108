import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../../http/schemas.ts';
import { AppSchema, UpdateAppBody } from '../../apps/schemas.ts';
import { MAX_URL_LENGTH } from '../../apps/urls.ts';
import { CATEGORY_IDS } from '../listing/categories.ts';
import { DESCRIPTION_MAX, JUSTIFICATION_MAX, JUSTIFICATION_MIN, TAGLINE_MAX } from '../listing/rules.ts';

const strict = { additionalProperties: false } as const;

/**
 * Bodies bound sizes only, well above the rules: the service checks lengths, the category and
 * https so that each refusal names the field (and the scope) in the developer's terms.
 */
const Url = Type.String({ maxLength: MAX_URL_LENGTH * 2 });
const ScopeName = Type.String({ maxLength: 64 });

export const ScopeJustificationSchema = Type.Object(
  {
    scope: ScopeName,
    justification: Type.String({
      maxLength: JUSTIFICATION_MAX * 4,
      description: `${JUSTIFICATION_MIN} to ${JUSTIFICATION_MAX} characters: why the app needs the scope, in your own words`,
    }),
  },
  strict,
);

export const ListingSchema = Type.Object(
  {
    tagline: Type.String({ maxLength: TAGLINE_MAX * 4, description: `At most ${TAGLINE_MAX} characters` }),
    description_en: Type.String({ maxLength: DESCRIPTION_MAX * 2 }),
    description_es: Type.String({ maxLength: DESCRIPTION_MAX * 2 }),
    category: Type.String({ maxLength: 64, description: `One of ${CATEGORY_IDS.join(', ')}` }),
    app_url: Type.String({
      maxLength: MAX_URL_LENGTH * 2,
      description: 'https: the page of the app that starts the OAuth flow',
    }),
    scope_justifications: Type.Array(ScopeJustificationSchema, { maxItems: 20 }),
  },
  strict,
);

const { events_url: _eventsUrl, ...proposedFields } = UpdateAppBody.properties;
export const ProposedAppSchema = Type.Object(proposedFields, {
  ...strict,
  description: 'Proposed new app values; checked as PATCH checks them',
});

export const SubmissionBody = Type.Object(
  {
    listing: ListingSchema,
    note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    app: Type.Optional(ProposedAppSchema),
    events_url: Type.Optional(Nullable(Url)),
    version_id: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 64,
          description:
            'An app version (apv_) to review instead of `app` and `events_url`; approval releases it',
        }),
      ),
    ),
  },
  strict,
);

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.String({ minLength: 1, maxLength: 255, description: 'Required here' }),
});

export const CheckSchema = Type.Object(
  {
    name: Type.Union([
      Type.Literal('events_url_rejects_bad_signature'),
      Type.Literal('events_url_accepts_signed_test'),
      Type.Literal('scope_justifications_complete'),
      Type.Literal('listing_media_valid'),
    ]),
    passed: Type.Boolean(),
    detail: Type.Object(
      {
        summary: Type.String(),
        sent: Type.Optional(
          Type.Object({
            url: Type.String(),
            headers: Type.Record(Type.String(), Type.String()),
            body: Type.String(),
          }),
        ),
        received: Type.Optional(
          Type.Object({
            status_code: Nullable(Type.Integer()),
            duration_ms: Type.Integer(),
            body: Nullable(Type.String({ description: 'The first 4 KB of the answer' })),
            error: Nullable(Type.String()),
          }),
        ),
        scopes: Type.Optional(Type.Array(Type.String())),
        missing: Type.Optional(Type.Array(Type.Object({ scope: Type.String(), problem: Type.String() }))),
        media: Type.Optional(
          Type.Array(
            Type.Object({
              name: Type.String(),
              kind: Type.Union([Type.Literal('icon'), Type.Literal('screenshot')]),
              width: Type.Integer(),
              height: Type.Integer(),
              bytes: Type.Integer(),
            }),
          ),
        ),
        problems: Type.Optional(Type.Array(Type.String())),
      },
      { description: 'What was sent and what came back' },
    ),
  },
  { $id: 'Check' },
);

export const MediaRefSchema = Type.Object({
  name: Type.String({ description: 'Holds the content hash: the image at this name never changes' }),
  url: Type.String(),
});

export const MediaSetSchema = Type.Object(
  { icon: Nullable(MediaRefSchema), screenshots: Type.Array(MediaRefSchema) },
  { description: 'The listing images' },
);

export const SubmissionStatusSchema = Type.Union([
  Type.Literal('submitted'),
  Type.Literal('in_review'),
  Type.Literal('approved'),
  Type.Literal('rejected'),
  Type.Literal('changes_requested'),
  Type.Literal('withdrawn'),
]);

export const SubmissionSchema = Type.Object(
  {
    id: Type.String(),
    app_id: Type.String(),
    status: SubmissionStatusSchema,
    updates_published_app: Type.Boolean({ description: 'The app was published when this was sent' }),
    listing: ListingSchema,
    note: Nullable(Type.String()),
    app: Type.Object(
      {
        name: Type.String(),
        description: Type.String(),
        homepage_url: Nullable(Type.String()),
        privacy_url: Nullable(Type.String()),
        support_url: Nullable(Type.String()),
        redirect_uris: Type.Array(Type.String()),
        scopes: Type.Array(Type.String()),
      },
      { description: 'The snapshot of the app as submitted' },
    ),
    events_url: Nullable(Type.String()),
    media: MediaSetSchema,
    checks: Type.Array(CheckSchema),
    version_id: Nullable(Type.String({ description: 'The app version put forward, if any' })),
    reviewer_note: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
    started_at: Nullable(Timestamp),
    decided_at: Nullable(Timestamp),
  },
  { $id: 'Submission' },
);

export const SubmissionParams = Type.Object({ id: Id(64), sub_id: Id(64) }, strict);
export const ReviewParams = Type.Object({ id: Id(64) }, strict);

export const ChecksBody = Type.Object(
  {
    events_url: Type.Optional(Url),
    scopes: Type.Optional(Type.Array(ScopeName, { maxItems: 20 })),
    scope_justifications: Type.Optional(Type.Array(ScopeJustificationSchema, { maxItems: 20 })),
  },
  strict,
);
export const ChecksSchema = Type.Object({ checks: Type.Array(CheckSchema) });

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

const Lang = Type.Union([Type.Literal('en'), Type.Literal('es')], { default: 'en' });

export const StoreListQuery = Type.Object(
  {
    lang: Type.Optional(Lang),
    category: Type.Optional(Type.String({ maxLength: 64 })),
    q: Type.Optional(
      Type.String({
        maxLength: 100,
        description:
          'Full text over name, tagline and description in `lang` (stemmed, accents folded; quotes, `or` and `-word` work), or part of the name',
      }),
    ),
    sort: Type.Optional(
      Type.Union(
        [Type.Literal('relevance'), Type.Literal('rating'), Type.Literal('installs'), Type.Literal('newest')],
        {
          description:
            '`relevance` (the default with `q`), `rating`, `installs` or `newest` (the default without)',
        },
      ),
    ),
    tenant_id: Type.Optional(
      Type.String({ maxLength: 64, description: 'The company `installed` is about (default: all of yours)' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ maxLength: 512 })),
  },
  strict,
);

export const StoreAppQuery = Type.Object(
  { lang: Type.Optional(Lang), tenant_id: Type.Optional(Type.String({ maxLength: 64 })) },
  strict,
);

export const StoreAppSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    tagline: Type.String(),
    description: Type.String(),
    lang: Type.Union([Type.Literal('en'), Type.Literal('es')]),
    category: Type.String(),
    category_label: Type.String(),
    app_url: Type.String(),
    homepage_url: Nullable(Type.String()),
    privacy_url: Nullable(Type.String()),
    support_url: Nullable(Type.String()),
    scopes: Type.Array(
      Type.Object({ scope: Type.String(), description: Type.String(), justification: Type.String() }),
    ),
    installed: Type.Boolean(),
    published_at: Timestamp,
    icon_url: Nullable(Type.String()),
    screenshots: Type.Array(MediaRefSchema),
    rating_avg: Nullable(Type.Number({ description: 'Mean rating of the shown reviews, two decimals' })),
    review_count: Type.Integer(),
    rating_distribution: Type.Object({
      '1': Type.Integer(),
      '2': Type.Integer(),
      '3': Type.Integer(),
      '4': Type.Integer(),
      '5': Type.Integer(),
    }),
    installs: Type.Union([
      Type.Literal('<10'),
      Type.Literal('10+'),
      Type.Literal('100+'),
      Type.Literal('1000+'),
    ]),
  },
  { $id: 'StoreApp' },
);

export const CategoriesSchema = Type.Object({
  data: Type.Array(Type.Object({ id: Type.String(), en: Type.String(), es: Type.String() })),
});

export const MediaParams = Type.Object(
  { id: Id(64), name: Type.String({ minLength: 1, maxLength: 100 }) },
  strict,
);

export const RawImageBody = Type.Unknown({
  description: 'The image bytes (PNG or JPEG; the type is read from the bytes)',
});

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

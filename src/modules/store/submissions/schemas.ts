import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../../http/schemas.ts';
import { UpdateAppBody } from '../../apps/schemas.ts';
import { MAX_URL_LENGTH } from '../../apps/urls.ts';
import { CheckSchema } from '../checks/schemas.ts';
import { CATEGORY_IDS } from '../listing/categories.ts';
import { DESCRIPTION_MAX, JUSTIFICATION_MAX, JUSTIFICATION_MIN, TAGLINE_MAX } from '../listing/rules.ts';
import { MediaSetSchema } from '../media/schemas.ts';

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

export const ChecksBody = Type.Object(
  {
    events_url: Type.Optional(Url),
    scopes: Type.Optional(Type.Array(ScopeName, { maxItems: 20 })),
    scope_justifications: Type.Optional(Type.Array(ScopeJustificationSchema, { maxItems: 20 })),
  },
  strict,
);
export const ChecksSchema = Type.Object({ checks: Type.Array(CheckSchema) });

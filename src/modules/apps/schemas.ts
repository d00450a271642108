import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../http/schemas.ts';
import { API_VERSIONS } from '../shipments/events.ts';
import { ManifestSchema } from './manifest.ts';
import { MAX_URL_LENGTH } from './urls.ts';

const strict = { additionalProperties: false } as const;

/**
 * Bodies bound sizes only; the rules with their own problem codes (1 to 10 redirect URIs, scopes of
 * the catalogue, https links) are checked by the service, so the portal's forms get the same answers.
 */
// Longer than the service allows, so that an overlong URI gets its own error code and path.
const Url = Type.String({ maxLength: MAX_URL_LENGTH * 2 });
const OptionalUrl = Type.Optional(Nullable(Url));
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Description = Type.String({ minLength: 1, maxLength: 1000 });
const RedirectUris = Type.Array(Url, { maxItems: 50 });
const Scopes = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 });
const EventsApiVersion = Type.Enum(API_VERSIONS, {
  type: 'string',
  description:
    "The event version of the messages to the app's events URL (docs/api.md, Versioning): new apps get the latest unless they ask; apps registered before 2026-12-01 keep 2026-11-01",
});

export const AppParams = Type.Object({ id: Id(64) }, strict);

export const CreateAppBody = Type.Object(
  {
    name: Name,
    description: Description,
    homepage_url: OptionalUrl,
    privacy_url: OptionalUrl,
    support_url: OptionalUrl,
    redirect_uris: RedirectUris,
    scopes: Scopes,
    kind: Type.Union([Type.Literal('confidential'), Type.Literal('public')]),
    events_url: OptionalUrl,
    events_api_version: Type.Optional(EventsApiVersion),
  },
  strict,
);

// `kind` is fixed at registration: a public app cannot become confidential or the other way round.
export const UpdateAppBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    homepage_url: OptionalUrl,
    privacy_url: OptionalUrl,
    support_url: OptionalUrl,
    redirect_uris: Type.Optional(RedirectUris),
    scopes: Type.Optional(Scopes),
    events_url: OptionalUrl,
    events_api_version: Type.Optional(EventsApiVersion),
  },
  strict,
);

export const EventsBody = Type.Object({ url: Url, api_version: Type.Optional(EventsApiVersion) }, strict);

export const AppSchema = Type.Object(
  {
    id: Type.String(),
    client_id: Type.String({ description: 'The same value as id' }),
    name: Type.String(),
    description: Type.String(),
    homepage_url: Nullable(Type.String()),
    privacy_url: Nullable(Type.String()),
    support_url: Nullable(Type.String()),
    redirect_uris: Type.Array(Type.String()),
    scopes: Type.Array(Type.String()),
    kind: Type.Union([Type.Literal('confidential'), Type.Literal('public')]),
    events_url: Nullable(Type.String()),
    events_api_version: EventsApiVersion,
    status: Type.Union([
      Type.Literal('private'),
      Type.Literal('published'),
      Type.Literal('delisted'),
      Type.Literal('suspended'),
    ]),
    install_url: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'App' },
);

export const CreatedAppSchema = Type.Object({
  ...AppSchema.properties,
  client_secret: Type.Optional(Type.String({ description: 'Confidential apps: shown once' })),
  events_secret: Type.String(),
});

export const ClientSecretSchema = Type.Object({ client_secret: Type.String() });
export const EventsSecretSchema = Type.Object({ secret: Type.String() });

export const InstallationSchema = Type.Object(
  {
    id: Type.String(),
    app_id: Type.String(),
    app_name: Type.String(),
    app_status: Type.String({ description: 'private, published, delisted or suspended' }),
    held_reason: Type.Union([Type.Literal('app_suspended'), Type.Literal('needs_approval'), Type.Null()], {
      description:
        "Why the app's endpoints receive nothing: `app_suspended`, or `needs_approval` (the person who approved it left the company or lost the role: approve it again); null while the grant is in force",
    }),
    tenant_id: Type.String(),
    customer_account_id: Nullable(Type.String()),
    scopes: Type.Array(Type.String()),
    user_id: Type.String({ description: 'The person who approved last; app tokens act as them.' }),
    approved_by: Type.String({ description: 'The person who approved last (the same as user_id).' }),
    approved_at: Type.String({
      format: 'date-time',
      description: 'When the latest approval happened; earlier tokens ended then.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Installation' },
);

export const InstallationParams = Type.Object({ tenant_id: Id(64), inst_id: Id(64) }, strict);

export const CreateVersionBody = Type.Object(
  {
    manifest: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'The manifest (AppManifest); checked by the service, each problem answered with its path',
      },
    ),
    message: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  },
  strict,
);

export const VersionParams = Type.Object({ id: Id(64), vid: Id(64) }, strict);

export const ChangeSchema = Type.Object({
  path: Type.String({ description: 'A JSON pointer into the manifest: /scopes, /subscriptions/0' }),
  from: Type.Unknown(),
  to: Type.Unknown(),
});

export const AppVersionSchema = Type.Object(
  {
    id: Type.String({ description: 'apv_...' }),
    number: Type.Integer({ minimum: 1 }),
    status: Type.Union([Type.Literal('draft'), Type.Literal('active'), Type.Literal('superseded')]),
    manifest: ManifestSchema,
    changes: Type.Array(ChangeSchema, { description: 'From the version active when this one was made' }),
    message: Nullable(Type.String()),
    created_at: Timestamp,
    released_at: Nullable(Timestamp),
  },
  { $id: 'AppVersion' },
);

export const SubscriptionDeliveryParams = Type.Object({ id: Id(64), delivery_id: Id(64) }, strict);

export const SubscriptionDeliveryQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ maxLength: 512 })),
    status: Type.Optional(
      Type.Union([
        Type.Literal('pending'),
        Type.Literal('succeeded'),
        Type.Literal('failed'),
        Type.Literal('cancelled'),
      ]),
    ),
    installation_id: Type.Optional(Id(64)),
    event_type: Type.Optional(Type.String({ maxLength: 100 })),
  },
  strict,
);

const SubscriptionAttemptSchema = Type.Object({
  attempted_at: Timestamp,
  duration_ms: Type.Integer(),
  status_code: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  response_body: Nullable(Type.String({ description: 'The first 4 KB of the answer' })),
  trigger: Type.String(),
});

export const SubscriptionDeliverySchema = Type.Object({
  id: Type.String(),
  event_id: Type.String({ description: 'The webhook-id header' }),
  event_type: Type.String(),
  installation_id: Type.String(),
  customer_account_id: Nullable(Type.String()),
  livemode: Type.Boolean(),
  subscription_index: Type.Integer({ description: "The subscription's place in the active manifest" }),
  url: Type.String(),
  status: Type.String(),
  attempt_count: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  last_status_code: Nullable(Type.Integer()),
  created_at: Timestamp,
  updated_at: Timestamp,
  attempts: Type.Array(SubscriptionAttemptSchema),
});

export const ReplayOutcomeSchema = Type.Object({
  delivery_id: Type.String(),
  status_code: Nullable(Type.Integer()),
  response_body: Nullable(Type.String()),
  duration_ms: Type.Integer(),
  error: Nullable(Type.String()),
});

export const InstallationOfAppParams = Type.Object({ id: Id(64), inst_id: Id(64) }, strict);

export const EffectiveSubscriptionSchema = Type.Object({
  index: Type.Integer(),
  event_types: Type.Array(Type.String()),
  url: Type.String(),
  filter: Nullable(Type.Object({}, { additionalProperties: true })),
  test_events: Type.Boolean(),
  active: Type.Boolean({ description: 'Something of it is sent now' }),
  withheld_event_types: Type.Array(Type.String()),
  reason: Nullable(
    Type.Union([
      Type.Literal('app_suspended'),
      Type.Literal('needs_approval'),
      Type.Literal('disabled'),
      Type.Literal('scope_not_granted'),
      Type.Literal('muted'),
    ]),
  ),
});

export const EffectiveSubscriptionsSchema = Type.Object({
  installation_id: Type.String(),
  held_reason: Nullable(Type.String({ description: 'app_suspended or needs_approval; null while in force' })),
  data: Type.Array(EffectiveSubscriptionSchema),
});

export const OwnInstallationSchema = Type.Object({
  id: Type.String(),
  app_id: Type.String(),
  tenant_id: Type.String(),
  customer_account_id: Nullable(Type.String()),
  scopes: Type.Array(Type.String(), {
    description: "The granted scopes in force (the approver's role holds them)",
  }),
  held_reason: Nullable(Type.String({ description: 'app_suspended or needs_approval; null while in force' })),
  muted_event_types: Type.Array(Type.String()),
  subscriptions: Type.Array(EffectiveSubscriptionSchema),
});

export const MuteBody = Type.Object(
  {
    muted_event_types: Type.Array(Type.String({ maxLength: 100 }), {
      maxItems: 50,
      description: 'Types the subscriptions stop sending to this installation; [] sends them again',
    }),
  },
  strict,
);

export const ScopeParams = Type.Object(
  { scope: Type.String({ maxLength: 100, description: 'The scope given back, e.g. webhooks:write' }) },
  strict,
);

export const BulkReplayQuery = Type.Object(
  { installation_id: Type.Optional(Id(64)) },
  { additionalProperties: false },
);

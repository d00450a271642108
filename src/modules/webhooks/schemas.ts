import { Type } from 'typebox';
import { Id, Nullable, PageQuery, Timestamp } from '../../http/schemas.ts';
import { API_VERSIONS } from '../shipments/events.ts';
import { MAX_CUSTOM_HEADERS, MAX_HEADER_VALUE, RATE_LIMIT_MAX } from './controls.ts';
import { DELIVERY_STATUSES } from './deliveries.ts';
import { AUDIENCES, RECEIVERS } from './event-schema.ts';
import { EVENT_DEFINITIONS, EVENT_TYPES } from './event-types.ts';

const EventTypeName = Type.String({ minLength: 1, maxLength: 100, examples: [...EVENT_TYPES] });
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'A public https:// URL' });
const Description = Nullable(Type.String({ maxLength: 500 }));
export const EventTypeList = Type.Array(EventTypeName, {
  minItems: 1,
  // As long as the whole catalogue, so that a list holding app types is told which (422), not only how long.
  maxItems: EVENT_DEFINITIONS.length,
  description: `Any of ${EVENT_TYPES.join(', ')} (the catalogue's audience "endpoints"); at least one, none twice`,
});

export const RateLimit = Nullable(
  Type.Integer({
    minimum: 1,
    maximum: RATE_LIMIT_MAX,
    description:
      'Messages a second this endpoint receives at most, across every worker, in any one-second window (sliding); null for no limit',
  }),
);
export const OrderingName = Type.Union([Type.Literal('none'), Type.Literal('per_shipment')], {
  description:
    '`per_shipment`: messages about one shipment reach the endpoint one at a time, in the order of their events; the next goes once the one before succeeded, failed for good or was cancelled. Replays and test messages are outside the order.',
});
const CustomHeaders = Type.Record(
  Type.String({ minLength: 1, maxLength: 100 }),
  Type.String({ maxLength: MAX_HEADER_VALUE }),
  {
    maxProperties: MAX_CUSTOM_HEADERS,
    description: `Sent with every message, at most ${MAX_CUSTOM_HEADERS}. Names Waybill or HTTP sets (webhook-*, content-type, user-agent, host, ...) are refused with 422. Values are encrypted at rest; credentials (authorization and the like) come back masked.`,
  },
);
/** A filter (CONTRACT.md "Apps as code"; filter.ts checks and compiles it). No $id: bodies embed it. */
export const EventFilterSchema = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'Which events of the subscribed types are sent. Keys are dotted paths into the envelope (`data.shipment.status`), values conditions: `{eq}`, `{ne}`, `{in: [...]}`, `{nin: [...]}`, `{exists: bool}`, `{gt}`, `{gte}`, `{lt}`, `{lte}` (numbers and timestamps), `{prefix}`; every key must hold. `{"any": [filter, ...]}` holds when one does, `{"not": filter}` when it does not. At most 20 conditions; paths are checked against the event types\' schemas in the target\'s `api_version`, on whose message it is evaluated (422 `filter.unknown_path`). An event the filter leaves out makes no delivery.',
  },
);

const DeliveryControls = {
  rate_limit: Type.Optional(RateLimit),
  ordering: Type.Optional(OrderingName),
  headers: Type.Optional(Nullable(CustomHeaders)),
};

/** Checked by the service (destinations/spec.ts) so that each mistake has its path and its words. */
export const DestinationInput = Type.Object(
  {
    type: Type.String({ description: '`https` (the default), `rabbitmq` or `nats`', examples: ['rabbitmq'] }),
    url: Type.Optional(
      Type.String({
        maxLength: 2048,
        description:
          'https://…, amqp[s]://user:pass@host:port/vhost or nats|tls://user:pass@host:port. Answers mask the password (****); a PATCH may send the masked URL back to keep the password, if the host stays',
      }),
    ),
    exchange: Type.Optional(Type.String({ maxLength: 255, description: 'rabbitmq: the exchange' })),
    routing_key: Type.Optional(
      Type.String({
        maxLength: 255,
        description: 'rabbitmq: the routing key; `{event_type}` is the event type',
      }),
    ),
    subject: Type.Optional(
      Type.String({ maxLength: 255, description: 'nats: the JetStream subject; `{event_type}` allowed' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Where messages go: an HTTPS URL (what `url` alone means) or a message broker',
  },
);

const DestinationSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('https'), Type.Literal('rabbitmq'), Type.Literal('nats')]),
    url: Type.String({ description: "The URL; a broker URL's password masked (****)" }),
    exchange: Type.Optional(Type.String()),
    routing_key: Type.Optional(Type.String()),
    subject: Type.Optional(Type.String()),
  },
  { description: 'Where messages go (CONTRACT.md "Destinations")' },
);

export const ListEndpointsQuery = Type.Object(
  {
    ...PageQuery.properties,
    api_version: Type.Optional(
      Type.Enum(API_VERSIONS, {
        type: 'string',
        description:
          'Only the endpoints on this version: `2026-11-01` lists those still on the deprecated one',
      }),
    ),
  },
  { additionalProperties: false },
);

export const EndpointIdParams = Type.Object({ id: Id(64) }, { additionalProperties: false });

export const ApiVersionName = Type.Enum(API_VERSIONS, {
  type: 'string',
  description:
    'The event version of its messages (docs/api.md, Versioning): new endpoints get the latest unless they ask; existing ones keep 2026-11-01',
});

export const CreateEndpointBody = Type.Object(
  {
    api_version: Type.Optional(ApiVersionName),
    url: Type.Optional(Url),
    destination: Type.Optional(DestinationInput),
    event_types: EventTypeList,
    description: Type.Optional(Description),
    filter: Type.Optional(Nullable(EventFilterSchema)),
    ...DeliveryControls,
  },
  { additionalProperties: false },
);

export const UpdateEndpointBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    api_version: Type.Optional(ApiVersionName),
    url: Type.Optional(Url),
    destination: Type.Optional(DestinationInput),
    event_types: Type.Optional(EventTypeList),
    description: Type.Optional(Description),
    filter: Type.Optional(Nullable(EventFilterSchema, { description: 'null removes the filter' })),
    ...DeliveryControls,
  },
  { additionalProperties: false },
);

export const EndpointSchema = Type.Object(
  {
    id: Type.String(),
    url: Type.String({
      description: "The HTTPS URL, or a broker destination's URL with its password masked",
    }),
    destination: DestinationSchema,
    description: Nullable(Type.String()),
    event_types: Type.Array(Type.String()),
    api_version: ApiVersionName,
    api_version_sunset_at: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'Read only. Set while the endpoint is on a deprecated version (2026-11-01): the date after which that version may be removed; move it with PATCH api_version. Null on a current version',
      }),
    ),
    livemode: Type.Boolean(),
    enabled: Type.Boolean(),
    disabled_reason: Nullable(
      Type.Union([Type.Literal('gone'), Type.Literal('failing'), Type.Literal('manual')]),
    ),
    installation_id: Nullable(Type.String()),
    held_reason: Type.Union([Type.Literal('app_suspended'), Type.Literal('needs_approval'), Type.Null()], {
      description:
        "Read only. Why an app installation's endpoint receives nothing: `app_suspended` (the app is suspended), `needs_approval` (the person who approved the app left the company or lost the role; a person must approve it again); null otherwise",
    }),
    withheld_event_types: Type.Array(Type.String(), {
      description:
        "Read only. Subscribed types the app installation's grant does not allow now (shipment events need shipments:read, operational events webhooks:read): they are not sent here. Empty for company and merchant endpoints",
    }),
    customer_account_id: Nullable(Type.String()),
    kind: Type.Union([Type.Literal('endpoint'), Type.Literal('cli')], {
      description:
        '`cli`: the temporary test endpoint of a `waybill listen` command, removed when it goes away',
    }),
    filter: Nullable(EventFilterSchema),
    rate_limit: RateLimit,
    ordering: OrderingName,
    headers: Type.Record(Type.String(), Type.String(), {
      description: 'The custom headers; credentials (authorization and the like) masked',
    }),
    paused_until: Type.Union([Timestamp, Type.Null()], {
      description:
        'Read only. Nothing is sent before this: the receiver answered 429 or 503 with Retry-After (at most 1 hour)',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'WebhookEndpoint' },
);

export const SecretSchema = Type.Object({
  secret: Type.String({ description: 'whsec_ followed by the base64 of 32 bytes' }),
});

export const EndpointWithSecretSchema = Type.Object({
  ...EndpointSchema.properties,
  ...SecretSchema.properties,
});

const Audience = Type.Enum(AUDIENCES, {
  type: 'string',
  description:
    'webhook_endpoints: endpoints subscribe to it; app_events_url: sent to the events URL of every app it concerns',
});

const Receiver = Type.Enum(RECEIVERS, {
  type: 'string',
  description:
    'Who receives it: endpoints subscribe to it (POST /v1/webhook-endpoints takes it); apps get it at their events URL (app events and privacy messages)',
});

export const EventTypeSchema = Type.Object(
  {
    type: Type.String({ description: "The event type: the body's type and the webhook-event header" }),
    description: Type.String({ description: 'When it is sent and what it means' }),
    audience: Receiver,
    sent_to: Type.Enum(AUDIENCES, {
      type: 'string',
      description: 'The older name of audience: webhook_endpoints (endpoints) or app_events_url (apps)',
    }),
    schema: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'JSON Schema (draft 2020-12) of the whole message body of this type; also the request body of this type in the webhooks of /openapi.json',
      },
    ),
    example: Type.Unknown({ description: 'A message body of this type, valid against schema' }),
  },
  { $id: 'WebhookEventType' },
);

export const EventTypesQuery = Type.Object(
  {
    audience: Type.Optional(Receiver),
    sent_to: Type.Optional(Audience),
    api_version: Type.Optional(ApiVersionName),
  },
  { additionalProperties: false },
);

const DeliveryStatusName = Type.Union(
  [Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('cancelled')],
  { description: DELIVERY_STATUSES.join(', ') },
);

export const DeliveryListQuery = Type.Object(
  { ...PageQuery.properties, status: Type.Optional(DeliveryStatusName) },
  { additionalProperties: false },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    endpoint_id: Type.String(),
    event_id: Type.String({ description: 'The webhook-id header' }),
    event_type: Type.String(),
    status: DeliveryStatusName,
    attempt_count: Type.Integer(),
    next_attempt_at: Nullable(Timestamp),
    last_status_code: Nullable(Type.Integer()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'WebhookDelivery' },
);

const AttemptError = Nullable(
  Type.String({
    description:
      "null, timeout, connection_failed, dns_failed, address_not_allowed, tls_failed, or for a broker destination broker_refused, broker_unroutable or auth_failed (the broker's reason in response_body)",
  }),
);

export const AttemptSchema = Type.Object({
  attempted_at: Timestamp,
  duration_ms: Type.Integer(),
  status_code: Nullable(Type.Integer()),
  error: AttemptError,
  response_body: Nullable(Type.String({ description: 'The first 4 KB of the answer' })),
  trigger: Type.Union([Type.Literal('scheduled'), Type.Literal('replay'), Type.Literal('test')]),
});

export const DeliveryDetailSchema = Type.Object({
  ...DeliverySchema.properties,
  message: Type.Object({
    headers: Type.Record(Type.String(), Type.String()),
    body: Type.String({ description: 'The raw body, byte for byte as signed' }),
  }),
  attempts: Type.Array(AttemptSchema),
});

export const ReplayResultSchema = Type.Object({
  delivery_id: Type.String(),
  delivery_status: DeliveryStatusName,
  ...AttemptSchema.properties,
});

export const BulkReplayResultSchema = Type.Object({ replayed: Type.Integer() });

export const TestSendBody = Type.Object(
  { event_type: Type.Optional(EventTypeName) },
  { additionalProperties: false },
);

export const TestSendResultSchema = Type.Object({
  delivery_id: Type.String(),
  status_code: Nullable(Type.Integer()),
  response_body: Nullable(Type.String()),
  duration_ms: Type.Integer(),
  error: AttemptError,
});

export const StatsQuery = Type.Object(
  {
    window: Type.Optional(
      Type.Union([Type.Literal('24h'), Type.Literal('7d')], {
        default: '24h',
        description: 'The current UTC hour and the 23 (24h) or 167 (7d) before it',
      }),
    ),
  },
  { additionalProperties: false },
);

export const EndpointStatsSchema = Type.Object(
  {
    window: Type.Union([Type.Literal('24h'), Type.Literal('7d')]),
    from: Timestamp,
    to: Timestamp,
    attempts: Type.Integer({
      description: 'Scheduled attempts and replays in the window (test sends are not counted)',
    }),
    succeeded: Type.Integer({ description: 'Attempts answered 2xx' }),
    failed: Type.Integer({ description: 'Attempts answered otherwise or not answered' }),
    success_rate: Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'succeeded / attempts' })),
    p50_ms: Nullable(Type.Integer({ description: 'Median attempt duration' })),
    p95_ms: Nullable(Type.Integer({ description: '95th percentile of attempt duration' })),
    failing_since: Nullable(Timestamp),
    disables_at: Nullable(
      Type.String({
        format: 'date-time',
        description: 'failing_since + 3 days: when the endpoint is disabled unless a delivery succeeds first',
      }),
    ),
    last_failure: Nullable(
      Type.Object({
        attempted_at: Timestamp,
        delivery_id: Type.String(),
        status_code: Nullable(Type.Integer()),
        error: Nullable(Type.String()),
      }),
    ),
    hourly: Type.Array(Type.Object({ hour: Timestamp, succeeded: Type.Integer(), failed: Type.Integer() }), {
      description: 'Every UTC hour of the window, oldest first',
    }),
  },
  { $id: 'WebhookEndpointStats' },
);

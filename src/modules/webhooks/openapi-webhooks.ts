import { isDeepStrictEqual } from 'node:util';
import {
  componentName,
  type EventDefinition,
  envelopeSchema,
  hoistDefinitions,
  inVersion,
} from './event-schema.ts';
import { EVENT_DEFINITIONS, exampleEnvelope } from './event-types.ts';

/**
 * The event catalogue in the OpenAPI document (3.1 `webhooks`): one entry per type whose request
 * body is the type's schema, so that generators (openapi-typescript) give receivers a type per
 * event. Shared shapes (Shipment, ShipmentEventData, ...) are components referenced from every
 * type that uses them; Shipment is the very component GET /v1/shipments/{id} answers with.
 */

type Json = Record<string, unknown>;
interface Document {
  components?: { schemas?: Record<string, unknown> };
  webhooks?: Record<string, unknown>;
}

const TAG = 'Webhook events';

/** A fixed example: the committed document must not change with the time it is generated. */
const EXAMPLE = {
  id: 'evt_example00000000000000000',
  tenantId: '00000000-0000-4000-8000-000000000000',
  at: new Date('2026-11-01T12:00:00.000Z'),
  livemode: true,
  customerAccountId: null,
};

const header = (name: string, description: string, pattern: string) => ({
  in: 'header',
  name,
  required: true,
  description,
  schema: { type: 'string', pattern },
});

const HEADERS = [
  header(
    'webhook-id',
    'The event id, as the body’s id: the same on every retry and replay',
    '^evt_[0-9A-Za-z]+$',
  ),
  header('webhook-timestamp', 'When this attempt was signed, in Unix seconds', '^[0-9]+$'),
  header(
    'webhook-signature',
    'v1,<base64 HMAC-SHA256 of {webhook-id}.{webhook-timestamp}.{raw body}>; two, space-separated, for 24 h after a secret rotation',
    '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$',
  ),
  header('webhook-event', 'The event type, as the body’s type', '^[a-z_]+(\\.[a-z_]+)+$'),
];

function operation(definition: EventDefinition): Json {
  const name = componentName(definition.type);
  const receiver = definition.sentTo === 'webhook_endpoints' ? 'webhook endpoint' : 'app’s events URL';
  return {
    post: {
      operationId: `${name[0]?.toLowerCase()}${name.slice(1)}`,
      summary: definition.type,
      description: `${definition.description}\n\nSent to every ${receiver} it concerns, signed as Standard Webhooks (see /docs/webhooks).`,
      tags: [TAG],
      security: [],
      parameters: HEADERS,
      requestBody: {
        required: true,
        description: `The ${definition.type} message`,
        content: {
          'application/json': {
            schema: { $ref: `#/components/schemas/${name}` },
            example: JSON.parse(exampleEnvelope({ ...EXAMPLE, type: definition.type })),
          },
        },
      },
      responses: {
        '2XX': { description: 'Received: any 2xx within 10 seconds counts as delivered' },
        '410': {
          description:
            definition.sentTo === 'webhook_endpoints'
              ? 'Gone: the endpoint is disabled at once and gets nothing more'
              : 'A failure like any other: an events URL is never disabled',
        },
        default: {
          description:
            'Anything else, or no answer within 10 seconds, is a failure: the message is retried for about 3 days',
        },
      },
    },
  };
}

/** Adds the catalogue to the document @fastify/swagger built from the routes. */
export function addEventCatalogue(document: Document): void {
  const components = document.components ?? {};
  const schemas = components.schemas ?? {};
  document.components = { ...components, schemas };
  const shared: Record<string, Json> = {};
  // The document's webhooks are 2026-11-01's (GET /v1/webhook-event-types?api_version= gives each version's).
  const definitions = EVENT_DEFINITIONS.filter((definition) => inVersion(definition, '2026-11-01'));
  for (const definition of definitions) {
    const envelope = envelopeSchema(definition);
    schemas[componentName(definition.type)] = hoistDefinitions(envelope, '#/components/schemas/', shared);
  }
  for (const [name, schema] of Object.entries(shared)) {
    // One definition for both: a route's component and a message's part must be the same shape.
    if (name in schemas && !isDeepStrictEqual(schemas[name], schema)) {
      throw new Error(`the component ${name} differs from the ${name} of the event catalogue`);
    }
    schemas[name] = schema;
  }
  document.webhooks = Object.fromEntries(definitions.map((d) => [d.type, operation(d)]));
}

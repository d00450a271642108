import { isDeepStrictEqual } from 'node:util';
import { type ApiVersion, LATEST_API_VERSION } from '../shipments/events.ts';
import {
  componentName,
  definitionIn,
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

function operation(definition: EventDefinition, version: ApiVersion): Json {
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
            example: JSON.parse(exampleEnvelope({ ...EXAMPLE, type: definition.type, apiVersion: version })),
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

/**
 * Adds the catalogue of one version (the latest unless given) to the document @fastify/swagger
 * built from the routes: each type's envelope as a component, its shared shapes beside the routes'.
 */
export function addEventCatalogue(document: Document, version: ApiVersion = LATEST_API_VERSION): void {
  const components = document.components ?? {};
  const schemas = components.schemas ?? {};
  document.components = { ...components, schemas };
  const shared: Record<string, Json> = {};
  const definitions = EVENT_DEFINITIONS.filter((definition) => inVersion(definition, version));
  for (const definition of definitions) {
    const envelope = envelopeSchema(definitionIn(definition, version), version);
    schemas[componentName(definition.type)] = hoistDefinitions(envelope, '#/components/schemas/', shared);
  }
  for (const [name, schema] of Object.entries(shared)) {
    // One definition for both: a route's component and a message's part must be the same shape.
    if (name in schemas && !isDeepStrictEqual(schemas[name], schema)) {
      throw new Error(`the component ${name} differs from the ${name} of the event catalogue`);
    }
    schemas[name] = schema;
  }
  document.webhooks = Object.fromEntries(definitions.map((d) => [d.type, operation(d, version)]));
}

/**
 * `/openapi.json?api_version=`: the document with another version's `webhooks` (decision 0081).
 * The routes are the same (REST answers the latest shape); the latest catalogue's components are
 * taken out (each type's envelope, then the shared shapes nothing refers to any more) and the
 * version's put in. A copy: the document the routes built is not touched.
 */
export function documentInVersion(latest: Document, version: ApiVersion): Document {
  const document = structuredClone(latest);
  if (version === LATEST_API_VERSION) return document;
  const schemas = document.components?.schemas ?? {};
  delete document.webhooks;
  for (const definition of EVENT_DEFINITIONS) delete schemas[componentName(definition.type)];
  const latestShared: Record<string, Json> = {};
  for (const definition of EVENT_DEFINITIONS.filter((d) => inVersion(d, LATEST_API_VERSION)))
    hoistDefinitions(
      envelopeSchema(definitionIn(definition, LATEST_API_VERSION), LATEST_API_VERSION),
      '#/components/schemas/',
      latestShared,
    );
  // A shape of the latest messages that neither a route nor another kept shape names goes too.
  for (let removed = true; removed; ) {
    removed = false;
    const text = JSON.stringify(document);
    for (const name of Object.keys(latestShared)) {
      if (name in schemas && !text.includes(`"#/components/schemas/${name}"`)) {
        delete schemas[name];
        removed = true;
      }
    }
  }
  addEventCatalogue(document, version);
  return document;
}

import { isDeepStrictEqual } from 'node:util';
import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import type { RouteAuth } from './auth.ts';

/**
 * What the OpenAPI document derives from the routes rather than repeating on each: operation ids,
 * security (from the route's `config.auth`, the same declaration the server enforces) and the
 * media type of error answers. Used by @fastify/swagger's `transform` and `transformObject`.
 */

const pascal = (words: string) =>
  words
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0]?.toUpperCase() + word.slice(1))
    .join('');

/**
 * A stable, unique operationId from method and path, which SDK generators name methods after:
 * `GET /v1/companies/:tenant_id/members` is `getCompaniesByTenantIdMembers`.
 */
export function operationIdOf(method: string, url: string): string {
  const parts = url
    .replace(/^\/v1\//, '/')
    .split('/')
    .filter(Boolean)
    .map((segment) => (segment.startsWith(':') ? `By${pascal(segment.slice(1))}` : pascal(segment)));
  return `${method.toLowerCase()}${parts.join('')}`;
}

/** The two kinds of bearer token, as the document's security schemes (src/app.ts). */
export const securitySchemes = {
  session: {
    type: 'http',
    scheme: 'bearer',
    description: "A signed-in person's session token (ust_), from POST /v1/auth/sessions",
  },
  token: {
    type: 'http',
    scheme: 'bearer',
    description:
      'An API token (sk_live_, sk_test_) or an app access token (atk_live_); the requirement lists the scope it must hold',
  },
} as const;

/**
 * A route's `config.auth` as a security requirement. Public operations say so with an empty list;
 * a token operation names its scope (OpenAPI 3.1 lets a non-OAuth scheme list the roles it needs).
 */
function securityOf(auth: RouteAuth) {
  if (auth === 'public') return [];
  if (auth === 'session') return [{ session: [] }];
  return [{ token: [auth.scope] }];
}

export const transformRoute: SwaggerTransform = ({ schema, url, route }) => {
  const auth = route.config?.auth;
  if (!schema || auth === undefined || typeof route.method !== 'string') return { schema, url };
  return {
    url,
    schema: {
      ...schema,
      operationId: operationIdOf(route.method, url),
      security: securityOf(auth),
    },
  };
};

type Content = Record<string, { schema?: unknown }>;
type Operation = { responses?: Record<string, { content?: Content }>; requestBody?: { content?: Content } };

/**
 * @fastify/swagger writes a route's own body or answer schema out in full even when it is a named
 * component (Shipment, for one, which the answers of GET /v1/shipments/{id} and the messages'
 * data.shipment share): point it at the component, so generated clients name one type for both.
 */
function referToComponents(operation: Operation, components: Record<string, unknown>): void {
  const named = (schema: unknown) => {
    const matches = Object.entries(components).filter(([, component]) =>
      isDeepStrictEqual(component, schema),
    );
    return matches.length === 1 ? { $ref: `#/components/schemas/${matches[0]?.[0]}` } : schema;
  };
  const contents = [
    operation.requestBody?.content,
    ...Object.values(operation.responses ?? {}).map((r) => r.content),
  ];
  for (const content of contents) {
    for (const media of Object.values(content ?? {})) if (media.schema) media.schema = named(media.schema);
  }
}

/**
 * The document's last touches: error answers are RFC 9457 problem details (src/http/errors.ts),
 * application/problem+json; then each `extend` adds what no route describes (the webhooks of the
 * event catalogue).
 */
export function transformDocument(
  ...extend: Array<(document: Record<string, unknown>) => void>
): SwaggerTransformObject {
  return (document) => {
    if (!('openapiObject' in document)) return document.swaggerObject;
    const { openapiObject } = document;
    const paths = (openapiObject.paths ?? {}) as Record<string, Record<string, Operation>>;
    const components = (openapiObject.components?.schemas ?? {}) as Record<string, unknown>;
    for (const operations of Object.values(paths)) {
      for (const operation of Object.values(operations)) {
        referToComponents(operation, components);
        for (const [status, response] of Object.entries(operation.responses ?? {})) {
          const content = response.content;
          if (!content || !(Number(status) >= 400) || !('application/json' in content)) continue;
          response.content = { 'application/problem+json': content['application/json'] };
        }
      }
    }
    for (const add of extend) add(openapiObject as Record<string, unknown>);
    return openapiObject;
  };
}

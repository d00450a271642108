import type { FastifyApiReferenceOptions } from '@scalar/fastify-api-reference';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  RouteHandlerMethod,
} from 'fastify';

/** Where the reference is served, and the URLs of Scalar's plugin under it (its version 1.x). */
export const API_REFERENCE_PREFIX = '/docs';
export const API_REFERENCE_URLS = [
  API_REFERENCE_PREFIX,
  `${API_REFERENCE_PREFIX}/`,
  `${API_REFERENCE_PREFIX}/js/scalar.js`,
  `${API_REFERENCE_PREFIX}/openapi.json`,
  `${API_REFERENCE_PREFIX}/openapi.yaml`,
] as const;

type Handlers = ReadonlyMap<string, RouteHandlerMethod>;

/**
 * What Scalar's plugin is given instead of Fastify: the little it reads of the application, and a
 * `route` that records each route's handler by URL.
 */
function recorder(app: FastifyInstance, handlers: Map<string, RouteHandlerMethod>) {
  return {
    initialConfig: app.initialConfig,
    log: app.log,
    hasPlugin: (name: string) => app.hasPlugin(name),
    swagger: () => app.swagger(),
    route: (route: { url: string; handler: RouteHandlerMethod }) => {
      handlers.set(route.url, route.handler);
    },
  };
}

/**
 * Runs Scalar's plugin (`@scalar/fastify-api-reference`) against a recorder and returns the
 * handlers it adds, by URL. Exported for the test that its URLs are the ones registered here.
 */
export async function loadApiReferenceHandlers(
  app: FastifyInstance,
  options: Omit<FastifyApiReferenceOptions, 'hooks'>,
): Promise<Handlers> {
  const { default: plugin } = await import('@scalar/fastify-api-reference');
  const handlers = new Map<string, RouteHandlerMethod>();
  await new Promise<void>((resolve, reject) => {
    // The plugin reads and calls only what the recorder has (see its dist/index.js).
    plugin(recorder(app, handlers) as unknown as FastifyInstance, options, (err?: Error) =>
      err ? reject(err) : resolve(),
    );
  });
  return handlers;
}

/**
 * The API reference at /docs: Scalar's page, its script and the OpenAPI document in JSON and
 * YAML. `@scalar/fastify-api-reference` is 40 to 50 MB of memory once imported (a 4 MB script
 * bundle held as a string, an OpenAPI parser with a YAML library), which a process that nobody
 * reads the reference from never needs: it is imported by the first request here, not at start
 * (issue 41 item 4, decision 0075). The answers are the plugin's own: its handlers are recorded
 * once and each route here hands its request to the one recorded at its URL.
 */
export function registerApiReference(
  app: FastifyInstance,
  options: Omit<FastifyApiReferenceOptions, 'hooks' | 'routePrefix'>,
  onRequest: onRequestHookHandler,
): void {
  let loading: Promise<Handlers> | null = null;
  const handlers = () => {
    if (!loading) {
      loading = loadApiReferenceHandlers(app, { ...options, routePrefix: API_REFERENCE_PREFIX });
      // A failed import is tried again by the next request.
      loading.catch(() => {
        loading = null;
      });
    }
    return loading;
  };
  for (const url of API_REFERENCE_URLS) {
    app.route({
      method: 'GET',
      url,
      schema: { hide: true },
      onRequest,
      async handler(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        const handler = (await handlers()).get(url);
        if (!handler) return reply.callNotFound();
        return handler.call(this, request, reply);
      },
    });
  }
}

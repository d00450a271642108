import type { FastifyInstance } from 'fastify';
import { DEPRECATED_VERSIONS, isApiVersion } from '../modules/shipments/events.ts';

/**
 * Decision 0025's deprecation, announced where a client sees it (decision 0081): a REST request
 * that names a deprecated version in `Waybill-Version` is answered, whatever its outcome, with
 * `Deprecation` (RFC 9745, a Structured Field date: `@` and Unix seconds) and `Sunset`
 * (RFC 8594, an HTTP-date), both fixed dates, and a `Link` to the guide's versioning section.
 */
export function registerVersionHeaders(app: FastifyInstance, guideUrl: string): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1/')) return;
    const asked = request.headers['waybill-version'];
    if (!isApiVersion(asked)) return;
    const deprecated = DEPRECATED_VERSIONS[asked];
    if (!deprecated) return;
    reply.header('deprecation', `@${Math.floor(deprecated.deprecatedAt.getTime() / 1000)}`);
    reply.header('sunset', deprecated.sunsetAt.toUTCString());
    reply.header('link', `<${guideUrl}>; rel="deprecation"; type="text/html"`);
  });
}

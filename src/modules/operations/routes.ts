import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { readiness } from './health.ts';

const tags = ['Operations'];

const Healthy = Type.Object({ status: Type.Literal('ok') });
const ReadinessSchema = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
  failed: Type.Array(
    Type.Union([
      Type.Literal('shutting_down'),
      Type.Literal('starting'),
      Type.Literal('database'),
      Type.Literal('migrations'),
      Type.Literal('worker'),
    ]),
    { description: 'The checks that failed; empty when ready' },
  ),
});

/**
 * GET /healthz and GET /readyz (CONTRACT.md, Operability). No authentication, no rate limit (the
 * bearer hook and the limits only concern /v1 and the sign-in forms), never cached.
 */
export function healthRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/healthz',
      {
        // Operational probes, documented in docs/api.md and docs/operations.md, not API operations.
        schema: {
          hide: true,
          tags,
          summary: 'Liveness: 200 while the process answers (no database call)',
          response: { 200: Healthy },
        },
      },
      async (_request, reply) => reply.header('cache-control', 'no-store').send({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        schema: {
          hide: true,
          tags,
          summary: 'Readiness: 200 when this process should get traffic, otherwise 503 naming what failed',
          description:
            'Checks: the process has started (it waits for its database and applies the migrations first), the database answers within 2 s, every migration is applied, and in a process running the delivery worker its loop turned within 30 s. From SIGTERM on: 503 with failed ["shutting_down"].',
          response: { 200: ReadinessSchema, 503: ReadinessSchema },
        },
      },
      async (_request, reply) => {
        const result = await readiness({ db: ctx.db, health: ctx.health, now: ctx.clock.now() });
        return reply
          .code(result.status === 'ready' ? 200 : 503)
          .header('cache-control', 'no-store')
          .send(result);
      },
    );
  };
}

/** Times every answer of `app` into waybill_http_request_duration_seconds, by route pattern. */
export function registerHttpMetrics(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onResponse', async (request, reply) => {
    // The pattern (/v1/shipments/:id), never the URL: label values stay a closed set.
    const route = request.routeOptions.url ?? 'unmatched';
    ctx.metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });
}

const PROBES = new Set(['/healthz', '/readyz']);

/**
 * While the process waits for its database and migrates (a start during an outage), it listens
 * already, so that probes see it: everything but /healthz and /readyz answers 503
 * `service.starting`, through each route's own error handler (problem details, RFC 6749 on the
 * OAuth endpoints, a page for people).
 */
export function registerStartingGate(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onRequest', async (request) => {
    if (ctx.health.starting && !PROBES.has(request.url.split('?')[0] as string))
      throw new AppError('service.starting');
  });
}

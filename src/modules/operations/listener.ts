import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../../context.ts';
import { registerErrorHandling } from '../../http/errors.ts';
import { healthRoutes } from './routes.ts';

export interface OperationsListener {
  /** http://host:port of the listener. */
  url: string;
  close(): Promise<void>;
}

/**
 * The listener of WAYBILL_METRICS_PORT: /metrics in the Prometheus text format, beside /healthz
 * and /readyz (a worker-only process has no other port to probe). It is a Fastify instance of its
 * own, so /metrics never exists on the public port.
 */
export async function startOperationsListener(
  ctx: AppContext,
  options: { port: number; host: string },
): Promise<OperationsListener> {
  ctx.metrics.collectProcessDefaults();
  // Scrapes and probes every few seconds are not worth a log line each: warnings and errors only.
  const level = ctx.log.levelVal > (ctx.log.levels.values.warn ?? 40) ? ctx.log.level : 'warn';
  const log = ctx.log.child({ listener: 'operations' }, { level });
  const app = Fastify({ loggerInstance: log as FastifyBaseLogger });
  registerErrorHandling(app);
  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await ctx.metrics.exposition();
    return reply.type(contentType).header('cache-control', 'no-store').send(body);
  });
  await app.register(healthRoutes(ctx));
  const address = await app.listen({ port: options.port, host: options.host });
  return { url: address, close: () => app.close() };
}

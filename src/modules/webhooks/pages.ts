import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';

export function webhookPages(_ctx: AppContext): FastifyPluginAsync {
  return async () => {};
}

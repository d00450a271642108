import type { FastifyRequest } from 'fastify';
import { peerAddress } from '../../../http/rate-limits.ts';

/**
 * "Check my events URL" makes Waybill send two requests to a server the developer names: thirty
 * runs a minute per person (API) or per address (portal page), so it cannot be used as a cannon.
 */
export const checkRunsRateLimit = {
  max: 30,
  timeWindow: '1 minute',
  keyGenerator: (request: FastifyRequest) =>
    request.principal?.kind === 'user' ? `user:${request.principal.userId}` : `ip:${peerAddress(request)}`,
} as const;

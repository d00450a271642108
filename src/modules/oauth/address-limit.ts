import type { FastifyRequest } from 'fastify';
import { peerAddress } from '../../http/rate-limits.ts';
import { OAuthError } from './errors.ts';

/**
 * A fixed-window counter per address. @fastify/rate-limit runs one limit per request (it marks the
 * request once any of its limiters ran), so the per-client limit is the plugin's and this is the
 * per-address one. Memory stays bounded: the whole table is dropped when a window ends.
 */
export function addressLimit(max: number, windowMs = 60_000) {
  let windowStart = Date.now();
  let counts = new Map<string, number>();
  return async (request: FastifyRequest) => {
    const now = Date.now();
    if (now - windowStart >= windowMs) {
      windowStart = now;
      counts = new Map();
    }
    const address = peerAddress(request);
    const count = (counts.get(address) ?? 0) + 1;
    counts.set(address, count);
    if (count > max) {
      const error = new OAuthError('invalid_request', 'too many requests');
      throw Object.assign(error, { retryAfter: Math.ceil((windowStart + windowMs - now) / 1000) });
    }
  };
}

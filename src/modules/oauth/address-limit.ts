import type { FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { peerAddress } from '../../http/rate-limits.ts';
import { addMs, DAY } from '../../lib/clock.ts';
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

/**
 * Takes one place of `max` for an address key (lib/address-key.ts, through peerAddress) in the
 * current fixed window of `windowMs` on the injected clock. Counted in the database by one upsert
 * that adds only below `max`: every process counts the same, and of concurrent requests exactly
 * `max` get a place. Null when there was a place, else the seconds until the window ends.
 */
export async function takeAddressPlace(
  ctx: AppContext,
  what: string,
  address: string,
  max: number,
  windowMs: number,
): Promise<number | null> {
  const now = ctx.clock.now().getTime();
  const windowStart = new Date(now - (now % windowMs));
  const taken = await ctx.db
    .insertInto('oauth_address_counts')
    .values({ subject: `${what}:${address}`, window_start: windowStart, count: 1 })
    .onConflict((oc) =>
      oc
        .columns(['subject', 'window_start'])
        .doUpdateSet({ count: sql`oauth_address_counts.count + 1` })
        .where('oauth_address_counts.count', '<', max),
    )
    .returning('count')
    .executeTakeFirst();
  return taken ? null : Math.max(1, Math.ceil((windowStart.getTime() + windowMs - now) / 1000));
}

/** Forgets windows that ended a day ago or more (the longest window is an hour); housekeeping. */
export async function purgeAddressCounts(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .deleteFrom('oauth_address_counts')
    .where('window_start', '<', addMs(ctx.clock.now(), -DAY))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

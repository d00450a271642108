import type { FastifyRequest } from 'fastify';
import { addressKey } from '../lib/address-key.ts';
import { normalizeEmail } from '../modules/accounts/users.ts';

/**
 * The client's address as limits count it (lib/address-key.ts: an IPv6 /64 is one address): the
 * connection's, or X-Forwarded-For's only when the connection comes from a proxy named in
 * WAYBILL_TRUST_PROXY (so a client cannot vary it to escape a limit).
 */
export function peerAddress(request: FastifyRequest): string {
  return addressKey(request.ip ?? request.socket.remoteAddress ?? 'unknown');
}

/**
 * Sign-in (POST /v1/auth/sessions and the /signin form): WAYBILL_SIGN_IN_RATE_LIMIT (10) attempts a
 * minute per client address and e-mail, a bound on the password hashing a client can ask for;
 * guessing itself is slowed per account and source by the sign-in throttle
 * (modules/accounts/sign-in-throttle.ts). Counted after the body is read (preHandler), where the
 * e-mail is known.
 */
export function signInRateLimit(config: { signInRateLimit: number }) {
  return {
    max: config.signInRateLimit,
    timeWindow: '1 minute',
    hook: 'preHandler',
    keyGenerator: (request: FastifyRequest) => {
      const email = (request.body as { email?: unknown } | undefined)?.email;
      return `${peerAddress(request)}|${typeof email === 'string' ? normalizeEmail(email) : ''}`;
    },
  } as const;
}

/** Sign-up: twenty accounts a minute per client address. */
/** Asking for a new verification link, per client address (the service limits it per person too). */
export const emailVerificationRateLimit = {
  max: 10,
  timeWindow: '1 minute',
  keyGenerator: peerAddress,
} as const;

export const signUpRateLimit = {
  max: 20,
  timeWindow: '1 minute',
  keyGenerator: peerAddress,
} as const;

/** The public tracking page (/t/{token}), per client address: a bound on guessing tokens too. */
export function trackingPageRateLimit(config: { trackingPageRateLimit: number }) {
  return { max: config.trackingPageRateLimit, timeWindow: '1 minute', keyGenerator: peerAddress } as const;
}

import type { FastifyRequest } from 'fastify';
import { normalizeEmail } from '../modules/accounts/users.ts';

/**
 * The client's address: the connection's, or X-Forwarded-For's only when the connection comes
 * from a proxy named in WAYBILL_TRUST_PROXY (so a client cannot vary it to escape a limit).
 */
function peerAddress(request: FastifyRequest): string {
  return request.ip ?? request.socket.remoteAddress ?? 'unknown';
}

/**
 * Sign-in (POST /v1/auth/sessions and the /signin form): ten attempts a minute per client and
 * e-mail, so password guessing is slow while other people on the same network still get in.
 * Counted after the body is read (preHandler), where the e-mail is known.
 */
export const signInRateLimit = {
  max: 10,
  timeWindow: '1 minute',
  hook: 'preHandler',
  keyGenerator: (request: FastifyRequest) => {
    const email = (request.body as { email?: unknown } | undefined)?.email;
    return `${peerAddress(request)}|${typeof email === 'string' ? normalizeEmail(email) : ''}`;
  },
} as const;

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

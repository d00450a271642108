import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../../db/database.ts';
import { AppError } from '../../lib/errors.ts';

/** The error codes of RFC 6749 sections 4.1.2.1 and 5.2 that this server answers. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'server_error'
  | 'temporarily_unavailable';

const STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  // RFC 6749 section 5.2: 401 when the client tried to authenticate (we always ask for Basic).
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  unsupported_response_type: 400,
  invalid_scope: 400,
  // RFC 8707 section 2: a resource this server does not serve, or not the grant's.
  invalid_target: 400,
  access_denied: 403,
  server_error: 500,
  temporarily_unavailable: 503,
};

/** An expected protocol failure; answered as RFC 6749 JSON (token, revoke) or a redirect (authorize). */
export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly status: number;
  /** A spent code or refresh token presented again: the installation's tokens were revoked (metrics). */
  readonly reuseDetected: boolean;

  constructor(code: OAuthErrorCode, description: string, options: { reuseDetected?: boolean } = {}) {
    super(description);
    this.name = 'OAuthError';
    this.code = code;
    this.status = STATUS[code];
    this.reuseDetected = options.reuseDetected ?? false;
  }
}

/**
 * An authorization request answered with an error page, never a redirect: the redirect target is
 * not trusted (RFC 6749 section 4.1.2.1). Thrown by the request's checks and by the client
 * metadata document's, so it lives here, below both.
 */
export class UntrustedRedirectError extends Error {
  readonly status: number;

  constructor(message: string, status = 400) {
    super(message);
    this.name = 'UntrustedRedirectError';
    this.status = status;
  }
}

/** RFC 6749 section 5.2 body, never cached (section 5.1). */
export function sendOAuthError(reply: FastifyReply, error: OAuthError, status = error.status) {
  if (error.code === 'invalid_client')
    reply.header('www-authenticate', 'Basic realm="waybill", charset="UTF-8"');
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .type('application/json; charset=utf-8')
    .send({ error: error.code, error_description: error.message });
}

/**
 * The one error handler of the token and revoke endpoints: everything they throw, Fastify's body
 * parsing and the rate limiter included, answers in the RFC 6749 format rather than problem details.
 */
export function oauthErrorHandler(
  error: FastifyError | OAuthError | AppError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  if (error instanceof OAuthError) {
    const retryAfter = (error as { retryAfter?: number }).retryAfter;
    if (retryAfter !== undefined) return sendOAuthError(reply.header('retry-after', retryAfter), error, 429);
    return sendOAuthError(reply, error);
  }
  // The shared input checks (src/http/input.ts: body type, text, depth) refuse a malformed request.
  if (error instanceof AppError && error.status < 500) {
    return sendOAuthError(reply, new OAuthError('invalid_request', error.message));
  }
  const status = error instanceof AppError ? error.status : (error.statusCode ?? 500);
  // Too many attempts: RFC 6749 has no code for it, so invalid_request keeps clients' parsers happy
  // while the 429 status (and Retry-After from the limiter) says what happened.
  if (status === 429)
    return sendOAuthError(reply, new OAuthError('invalid_request', 'too many requests'), 429);
  if (status >= 400 && status < 500) {
    return sendOAuthError(
      reply,
      new OAuthError('invalid_request', 'send the parameters as an application/x-www-form-urlencoded body'),
    );
  }
  // The database is away, or the process is still starting (waiting for it): try again shortly.
  const starting = error instanceof AppError && error.code === 'service.starting';
  if (starting || isDatabaseUnavailable(error)) {
    const unavailable = new OAuthError(
      'temporarily_unavailable',
      starting ? 'the service is starting' : 'the service cannot reach its database',
    );
    return sendOAuthError(reply.header('retry-after', '5'), unavailable);
  }
  request.log.error({ err: error }, 'unhandled error at an OAuth endpoint');
  return sendOAuthError(
    reply,
    new OAuthError('server_error', `something went wrong (request ${request.id})`),
  );
}

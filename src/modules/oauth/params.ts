import type { FastifyRequest } from 'fastify';
import { OAuthError } from './errors.ts';

/** The parameters of a token or revoke request, one value each. */
export type OAuthParams = ReadonlyMap<string, string>;

/**
 * Reads a form body. RFC 6749 section 3.2: the token endpoint takes
 * application/x-www-form-urlencoded; section 3.1: parameters MUST NOT repeat.
 */
export function formParams(request: FastifyRequest): OAuthParams {
  const type = String(request.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError(
      'invalid_request',
      'send the parameters as an application/x-www-form-urlencoded body',
    );
  }
  const body = (request.body ?? {}) as Record<string, unknown>;
  const params = new Map<string, string>();
  for (const [name, value] of Object.entries(body)) {
    if (typeof value !== 'string') throw new OAuthError('invalid_request', `${name} is repeated`);
    // RFC 6749 section 3.1: a parameter sent without a value is treated as omitted.
    if (value !== '') params.set(name, value);
  }
  return params;
}

export function requireParam(params: OAuthParams, name: string, maxLength = 512): string {
  const value = params.get(name);
  if (value === undefined) throw new OAuthError('invalid_request', `${name} is required`);
  if (value.length > maxLength) throw new OAuthError('invalid_request', `${name} is too long`);
  return value;
}

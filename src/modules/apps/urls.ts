import ipaddr from 'ipaddr.js';
import { bareHost, needsAllowlist, urlShapeProblem } from '../../delivery/guard.ts';
import type { FieldError } from '../../lib/errors.ts';

/** Redirect URIs per app (spec section 8). */
export const MAX_REDIRECT_URIS = 10;
export const MAX_URL_LENGTH = 2000;

/** Loopback hosts a native or development app may redirect to over plain http (RFC 8252 section 7.3). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** `scheme://user:pass@host`: credentials in the authority, which URL parsing would hide. */
const USERINFO = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i;

function parse(value: string): URL | null {
  // URIs are printable ASCII (RFC 3986). Whitespace, control and other characters would be dropped or
  // encoded by the parser, while the string we store is the one compared later: refuse them instead.
  if (!/^[!-~]+$/.test(value)) return null;
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/** Why a redirect URI is refused, or null when it is allowed (spec 2.1; OAuth 2.1 section 2.3). */
export function redirectUriProblem(value: string): string | null {
  if (value.length > MAX_URL_LENGTH) return `is longer than ${MAX_URL_LENGTH} characters`;
  const url = parse(value);
  if (!url) return 'is not an absolute URI';
  // Fragments are never part of a redirection endpoint (RFC 6749 section 3.1.2).
  if (value.includes('#')) return 'must not have a fragment';
  if (USERINFO.test(value) || url.username || url.password) return 'must not carry a user name or password';
  if (url.protocol === 'https:') return url.hostname ? null : 'has no host';
  if (url.protocol === 'http:') {
    return LOOPBACK_HOSTS.has(url.hostname) ? null : 'plain http is only allowed for localhost';
  }
  return 'must be https://... or http://localhost...';
}

/** Checks the whole list: 1 to 10 allowed URIs, none twice. Errors point at the offending entry. */
export function redirectUriErrors(uris: readonly string[]): FieldError[] {
  if (uris.length < 1 || uris.length > MAX_REDIRECT_URIS) {
    return [{ path: '/redirect_uris', message: `must list 1 to ${MAX_REDIRECT_URIS} redirect URIs` }];
  }
  const errors: FieldError[] = [];
  uris.forEach((uri, i) => {
    const problem = redirectUriProblem(uri);
    if (problem) errors.push({ path: `/redirect_uris/${i}`, message: problem });
    else if (uris.indexOf(uri) !== i)
      errors.push({ path: `/redirect_uris/${i}`, message: 'is listed twice' });
  });
  return errors;
}

/** A link shown to people (homepage, privacy, support): absolute https, no credentials, no fragment. */
export function httpsUrlProblem(value: string): string | null {
  const url = absoluteUrl(value);
  if (typeof url === 'string') return url;
  return url.protocol === 'https:' ? null : 'must be an https:// URL';
}

/**
 * The events URL, where app events are sent: the link rules, then the delivery guard's own checks
 * that need no name resolution (scheme, port 443, an address written in the URL; plain http and
 * other ports only to an address of the development allowlist, written in the URL). A host name
 * is resolved and checked by the guard at every connection.
 */
/**
 * What is wrong with an events URL as written: `shape` (not an https URL on 443, a fragment, user
 * info: 400 validation.failed) or `address` (an address the guard refuses, written in the URL: 422
 * app.events_url_not_allowed, the code a name resolving to one gets too).
 */
export function eventsUrlProblem(
  value: string,
  allowPrivate: readonly string[],
): { kind: 'shape' | 'address'; message: string } | null {
  const url = absoluteUrl(value);
  if (typeof url === 'string') return { kind: 'shape', message: url };
  const problem = urlShapeProblem(url, allowPrivate);
  if (problem?.startsWith('the address ')) {
    return { kind: 'address', message: problem.replace(/^the address /, 'points to an address that ') };
  }
  if (problem) return { kind: 'shape', message: problem.replace(/^the URL /, '') };
  // Resolving names is left to the connection, so a name gets https on 443 only, never the allowlist.
  if (!ipaddr.isValid(bareHost(url.hostname)) && needsAllowlist(url.protocol, url.port)) {
    return { kind: 'shape', message: 'must use https on port 443' };
  }
  return null;
}

function absoluteUrl(value: string): URL | string {
  if (value.length > MAX_URL_LENGTH) return `is longer than ${MAX_URL_LENGTH} characters`;
  const url = parse(value);
  if (!url) return 'is not an absolute URL';
  if (value.includes('#')) return 'must not have a fragment';
  if (USERINFO.test(value) || url.username || url.password) return 'must not carry a user name or password';
  if (!url.hostname) return 'has no host';
  return url;
}

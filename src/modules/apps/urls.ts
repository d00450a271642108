import ipaddr from 'ipaddr.js';
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

function isAllowedPrivate(host: string, allowPrivate: readonly string[]): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  const address = ipaddr.process(bare);
  return allowPrivate.some((cidr) => {
    const [range, bits] = ipaddr.parseCIDR(cidr);
    return range.kind() === address.kind() && address.match([range, bits] as never);
  });
}

/**
 * A link shown to people (homepage, privacy, support) or the events URL: absolute https, no
 * credentials, no fragment. The events URL may also be plain http to an address the operator lets
 * through (WAYBILL_WEBHOOK_ALLOW_PRIVATE, development and tests); where it resolves is checked again
 * by the delivery guard at send time.
 */
export function httpsUrlProblem(value: string, allowPrivate: readonly string[] = []): string | null {
  if (value.length > MAX_URL_LENGTH) return `is longer than ${MAX_URL_LENGTH} characters`;
  const url = parse(value);
  if (!url) return 'is not an absolute URL';
  if (value.includes('#')) return 'must not have a fragment';
  if (USERINFO.test(value) || url.username || url.password) return 'must not carry a user name or password';
  if (!url.hostname) return 'has no host';
  if (
    url.protocol === 'https:' ||
    (url.protocol === 'http:' && isAllowedPrivate(url.hostname, allowPrivate))
  ) {
    return null;
  }
  return 'must be an https:// URL';
}

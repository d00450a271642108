import { constantTimeEqual, sha256Base64url } from '../../lib/crypto.ts';

/** RFC 7636 section 4.1: 43 to 128 characters of the unreserved set. */
export const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** RFC 7636 section 4.2: BASE64URL(SHA256(verifier)) is always 43 characters. */
export const CODE_CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

/** RFC 7636 section 4.6: S256 only (OAuth 2.1 section 4.1.1 lets a server refuse plain). */
export function verifierMatches(verifier: string, challenge: string): boolean {
  return constantTimeEqual(sha256Base64url(verifier), challenge);
}

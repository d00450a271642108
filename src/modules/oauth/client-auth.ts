import type { AppContext } from '../../context.ts';
import { textFault } from '../../lib/text.ts';
import { type AppRecord, findAppByClientId, verifyClientSecret } from '../apps/registry.ts';
import { OAuthError } from './errors.ts';
import type { OAuthParams } from './params.ts';

export interface Presented {
  clientId: string;
  secret: string | null;
}

function formDecode(value: string): string {
  // RFC 6749 section 2.3.1: id and secret are form-urlencoded before they go into Basic.
  return decodeURIComponent(value.replace(/\+/g, '%20'));
}

/**
 * RFC 7617 Basic credentials, decoded in this one place (the rate limiter's client key reads them
 * too): null when the header is absent or another scheme, invalid_client when they do not decode
 * to plain text (a NUL or another control character, invalid UTF-8, no colon).
 */
export function basicCredentials(header: string | undefined): Presented | null {
  if (!header || !/^basic /i.test(header)) return null;
  // Made only when thrown: an Error captures its stack, a cost every token request paid (issue 10).
  const malformed = () => new OAuthError('invalid_client', 'malformed Basic credentials');
  const encoded = header.slice(6).trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) throw malformed();
  let clientId: string;
  let secret: string;
  try {
    const decoded = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(encoded, 'base64'));
    const colon = decoded.indexOf(':');
    if (colon < 1) throw malformed();
    clientId = formDecode(decoded.slice(0, colon));
    secret = formDecode(decoded.slice(colon + 1));
  } catch {
    throw malformed();
  }
  if (textFault(clientId, 'line') || textFault(secret, 'line')) throw malformed();
  return { clientId, secret };
}

/** Which credentials the client presented, by exactly one method. */
export function presentedCredentials(header: string | undefined, params: OAuthParams): Presented {
  const basic = basicCredentials(header);
  const bodyId = params.get('client_id');
  const bodySecret = params.get('client_secret');
  // RFC 6749 section 2.3: a client MUST NOT use more than one authentication method per request.
  if (basic && bodySecret !== undefined) {
    throw new OAuthError('invalid_request', 'authenticate with HTTP Basic or the form body, not both');
  }
  if (basic) {
    // RFC 6749 section 2.3.1: a client_id beside Basic must name the same client.
    if (bodyId !== undefined && bodyId !== basic.clientId) {
      throw new OAuthError('invalid_request', 'client_id differs from the Basic credentials');
    }
    return basic;
  }
  // RFC 6749 section 2.3 and 3.2.1: a client that does not authenticate still identifies itself.
  if (bodyId === undefined) throw new OAuthError('invalid_client', 'client authentication is required');
  return { clientId: bodyId, secret: bodySecret ?? null };
}

/**
 * Client authentication at the token and revoke endpoints (RFC 6749 section 2.3, OAuth 2.1
 * section 2.4): confidential apps by client_secret_basic or client_secret_post, public apps by
 * client_id alone ("none"). Every failure is invalid_client, so nothing tells which part was wrong.
 */
export async function authenticateClient(ctx: AppContext, presented: Presented): Promise<AppRecord> {
  // App ids are short; an agent's metadata document URL may be longer.
  if (presented.clientId.length > 2000) throw new OAuthError('invalid_client', 'unknown client');
  const app = await findAppByClientId(ctx, presented.clientId);
  // RFC 6749 section 5.2: unknown client.
  if (!app) throw new OAuthError('invalid_client', 'unknown client');
  // Spec 3.2: a suspended app's token endpoint answers invalid_client.
  if (app.status === 'suspended') throw new OAuthError('invalid_client', 'the app is suspended');
  if (app.kind === 'public') {
    // OAuth 2.1 section 2.4: a public client holds no secret; one that sends a secret is confused or forged.
    if (presented.secret !== null) throw new OAuthError('invalid_client', 'a public client sends no secret');
    return app;
  }
  // OAuth 2.1 section 2.4.1: a confidential client always authenticates.
  if (presented.secret === null) throw new OAuthError('invalid_client', 'client authentication is required');
  if (!verifyClientSecret(app, presented.secret))
    throw new OAuthError('invalid_client', 'wrong client secret');
  return app;
}

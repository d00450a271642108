import type { AppContext } from '../../context.ts';
import type { AppRecord } from '../apps/registry.ts';
import { authenticateClient } from './client-auth.ts';
import { OAuthError } from './errors.ts';
import { authorizationCodeGrant } from './grants/authorization-code.ts';
import { refreshTokenGrant } from './grants/refresh-token.ts';
import type { OAuthParams } from './params.ts';
import type { TokenResponse } from './tokens.ts';

type Grant = (ctx: AppContext, client: AppRecord, params: OAuthParams) => Promise<TokenResponse>;

/** Spec 5.7: only these two grants; no password, implicit or client-credentials grant. */
export const GRANTS: Readonly<Record<string, Grant>> = {
  authorization_code: authorizationCodeGrant,
  refresh_token: refreshTokenGrant,
};

/** POST /oauth/token, after the form is read (RFC 6749 section 3.2). */
export async function tokenRequest(
  ctx: AppContext,
  authorization: string | undefined,
  params: OAuthParams,
): Promise<TokenResponse> {
  // RFC 6749 section 3.2.1: authenticate the client first.
  const client = await authenticateClient(ctx, authorization, params);
  // RFC 6749 section 4.1.3: grant_type is required.
  const grantType = params.get('grant_type');
  if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required');
  // RFC 6749 section 5.2: unsupported_grant_type for anything else.
  const grant = Object.hasOwn(GRANTS, grantType) ? GRANTS[grantType] : undefined;
  if (!grant)
    throw new OAuthError('unsupported_grant_type', `grant_type ${grantType.slice(0, 50)} is not supported`);
  return grant(ctx, client, params);
}

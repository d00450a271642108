import type { AppContext } from '../../context.ts';
import { isDeadlock } from '../../db/database.ts';
import type { AppRecord } from '../apps/registry.ts';
import type { GrantOutcome } from '../operations/metrics.ts';
import { authenticateClient, type Presented, presentedCredentials } from './client-auth.ts';
import { OAuthError } from './errors.ts';
import { authorizationCodeFastPath, authorizationCodeGrant } from './grants/authorization-code.ts';
import { refreshTokenFastPath, refreshTokenGrant } from './grants/refresh-token.ts';
import type { OAuthParams } from './params.ts';
import type { TokenResponse } from './tokens.ts';

interface Grant {
  /** Every check in order, with its precise error. */
  run(ctx: AppContext, client: AppRecord, params: OAuthParams): Promise<TokenResponse>;
  /**
   * The whole request as ONE statement (client proof, grant checks, spend, issue), shared with the
   * requests of the same grant that arrive with it, or null without side effects when anything is
   * off; `run` then explains why. A valid request's answer is the same either way: this only saves
   * round trips to the database.
   */
  fast(ctx: AppContext, presented: Presented, params: OAuthParams): Promise<TokenResponse | null>;
}

/** Spec 5.7: only these two grants; no password, implicit or client-credentials grant. */
export const GRANTS: Readonly<Record<string, Grant>> = {
  authorization_code: { run: authorizationCodeGrant, fast: authorizationCodeFastPath },
  refresh_token: { run: refreshTokenGrant, fast: refreshTokenFastPath },
};

/** POST /oauth/token, counted by grant type and outcome (waybill_oauth_grants_total). */
export async function tokenRequest(
  ctx: AppContext,
  authorization: string | undefined,
  params: OAuthParams,
): Promise<TokenResponse> {
  const grantType = params.get('grant_type');
  try {
    const issued = await grantTokens(ctx, authorization, params);
    ctx.metrics.oauthGrant(grantType, 'issued');
    countForApp(ctx, authorization, params, grantType === 'refresh_token' ? 'refreshed' : 'issued');
    return issued;
  } catch (error) {
    const outcome = grantOutcome(error);
    ctx.metrics.oauthGrant(grantType, outcome);
    // invalid_grant comes after client authentication, so the app is known; but a public client's
    // authentication is its id alone, which anyone can send: those refusals are counted apart, so
    // that strangers cannot raise the figure a developer reads as their app's own failures.
    if (outcome === 'invalid_grant' || outcome === 'reuse_detected')
      countForApp(
        ctx,
        authorization,
        params,
        proved(authorization, params) ? 'invalid_grant' : 'invalid_grant_anonymous',
      );
    throw error;
  }
}

/** The developer console's token counts, for the app that authenticated. */
function countForApp(
  ctx: AppContext,
  authorization: string | undefined,
  params: OAuthParams,
  detail: 'issued' | 'refreshed' | 'invalid_grant' | 'invalid_grant_anonymous',
): void {
  const clientId = presentedCredentials(authorization, params).clientId;
  ctx.appUsage.count(clientId, 'token', detail);
}

/** Whether the request carried a client secret (checked before any invalid_grant): a proof, not just an id. */
function proved(authorization: string | undefined, params: OAuthParams): boolean {
  try {
    return presentedCredentials(authorization, params).secret !== null;
  } catch {
    return false;
  }
}

function grantOutcome(error: unknown): GrantOutcome {
  if (!(error instanceof OAuthError)) return 'server_error';
  if (error.reuseDetected) return 'reuse_detected';
  switch (error.code) {
    case 'invalid_grant':
    case 'invalid_client':
    case 'invalid_request':
    case 'invalid_scope':
    case 'unsupported_grant_type':
      return error.code;
    default:
      return 'invalid_request';
  }
}

/** POST /oauth/token, after the form is read (RFC 6749 section 3.2). */
async function grantTokens(
  ctx: AppContext,
  authorization: string | undefined,
  params: OAuthParams,
): Promise<TokenResponse> {
  // RFC 6749 section 2.3: exactly one client authentication method.
  const presented = presentedCredentials(authorization, params);
  const grantType = params.get('grant_type');
  const grant = grantType !== undefined && Object.hasOwn(GRANTS, grantType) ? GRANTS[grantType] : undefined;
  const issued = grant ? await grant.fast(ctx, presented, params) : null;
  if (issued) return issued;
  // RFC 6749 section 3.2.1: authenticate the client first.
  const client = await authenticateClient(ctx, presented);
  // RFC 6749 section 4.1.3: grant_type is required.
  if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required');
  // RFC 6749 section 5.2: unsupported_grant_type for anything else.
  if (!grant) {
    throw new OAuthError('unsupported_grant_type', `grant_type ${grantType.slice(0, 50)} is not supported`);
  }
  // A deadlock broken by the database undid this request's writes: its checks and spend run again
  // (a grant another request spent meanwhile is then refused, as it would have been).
  for (let attempt = 1; ; attempt++) {
    try {
      return await grant.run(ctx, client, params);
    } catch (error) {
      if (!isDeadlock(error) || attempt >= GRANT_TRIES) throw error;
    }
  }
}

const GRANT_TRIES = 3;

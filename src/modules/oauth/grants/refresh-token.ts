import { sql } from 'kysely';
import type { AppContext } from '../../../context.ts';
import { hashSecret } from '../../../lib/ids.ts';
import type { AppRecord } from '../../apps/registry.ts';
import type { Presented } from '../client-auth.ts';
import { OAuthError } from '../errors.ts';
import { type OAuthParams, requireParam } from '../params.ts';
import { fastResource, resourceUrl, tokenRequestResource } from '../resource.ts';
import {
  agentRulesHold,
  approverStillMember,
  grantInstallations,
  newTokenPair,
  reissuedPair,
  revokeForReuse,
  sealPair,
  spendAndIssue,
  spendAndIssueGrouped,
  type TokenResponse,
} from '../tokens.ts';

const invalidGrant = (reuseDetected = false) =>
  new OAuthError('invalid_grant', 'the refresh token is invalid, expired, spent or revoked: approve again', {
    reuseDetected,
  });

/** grant_type=refresh_token (OAuth 2.1 section 4.3), with rotation on every use. */
export async function refreshTokenGrant(
  ctx: AppContext,
  client: AppRecord,
  params: OAuthParams,
): Promise<TokenResponse> {
  // RFC 6749 section 6: refresh_token is required.
  const token = requireParam(params, 'refresh_token');
  // RFC 6749 section 6: a scope narrower than the grant is allowed; we do not support narrowing.
  if (params.has('scope')) throw new OAuthError('invalid_scope', 'scope cannot be changed on refresh');
  // RFC 8707 section 2.2: the resource may be repeated, never changed.
  const wanted = tokenRequestResource(ctx.config, client, params) ?? null;
  const tokenHash = hashSecret(token);
  const now = ctx.clock.now();
  const agent = client.developer_id === null;
  const pair = newTokenPair();

  // OAuth 2.1 section 4.3.1 and RFC 9700 section 4.14.2: spend and rotate in one compare-and-swap.
  // The happy path is this one statement; everything below only explains a failure. An agent's
  // spent token keeps the new pair sealed for the grace.
  const installations = await grantInstallations(ctx, 'oauth_tokens', [tokenHash]);
  const issued = await spendAndIssue(
    ctx,
    sql`UPDATE oauth_tokens SET used_at = ${now}, reissue_sealed = ${agent ? sealPair(ctx, pair, now) : null}
      WHERE token_hash = ${tokenHash} AND kind = 'refresh' AND app_id = ${client.id}
        AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ${now}
        AND ${approverStillMember('oauth_tokens', installations)}
        AND ${agentRulesHold('oauth_tokens', sql`${agent}`, installations)}
        AND resource = COALESCE(${wanted}::text, resource)
      RETURNING app_id, installation_id, tenant_id, user_id, scopes, resource`,
    pair,
    installations,
  );
  if (issued) return issued;

  const row = await ctx.db
    .selectFrom('oauth_tokens')
    .select(['app_id', 'installation_id', 'tenant_id', 'kind', 'used_at', 'revoked_at', 'resource'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  const ours = row && row.kind === 'refresh' && row.app_id === client.id && !row.revoked_at;
  if (ours && wanted !== null && wanted !== row.resource) {
    throw new OAuthError(
      'invalid_target',
      `the refresh token was issued for ${resourceUrl(ctx.config, row.resource)}`,
    );
  }
  if (ours && row.used_at) {
    // CONTRACT.md (Agents): an agent client presenting a token it spent moments ago (two of its
    // processes refreshing at once) gets the very pair that use minted, however often it asks.
    const again = await reissuedPair(ctx, tokenHash, client);
    if (again) return again;
    // Spec 3.4 and RFC 9700 section 4.14.2: any other second use of a spent refresh token revokes
    // every token of the installation (the person must approve again).
    await revokeForReuse(ctx, row, client.id, 'refresh_token');
    throw invalidGrant(true);
  }
  throw invalidGrant();
}

/**
 * The happy path of a refresh, in one statement with the refreshes that arrive with it (see GRANTS
 * in token-endpoint.ts and spendAndIssueGrouped).
 */
export async function refreshTokenFastPath(
  ctx: AppContext,
  presented: Presented,
  params: OAuthParams,
): Promise<TokenResponse | null> {
  const token = params.get('refresh_token');
  if (token === undefined || token.length > 512 || params.has('scope')) return null;
  const resource = fastResource(ctx, params);
  if (resource === null) return null;
  return spendAndIssueGrouped(ctx, 'refresh_token', {
    grantHash: hashSecret(token),
    presented,
    ...(resource ? { resource } : {}),
  });
}

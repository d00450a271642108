import type { AppContext } from '../../context.ts';
import { hashSecret } from '../../lib/ids.ts';
import { authenticateClient, presentedCredentials } from './client-auth.ts';
import { OAuthError } from './errors.ts';
import type { OAuthParams } from './params.ts';
import { revokeInstallationTokens } from './tokens.ts';

/** POST /oauth/revoke (RFC 7009). Answers nothing: the caller always says 200. */
export async function revocationRequest(
  ctx: AppContext,
  authorization: string | undefined,
  params: OAuthParams,
): Promise<void> {
  // RFC 7009 section 2.1: the client authenticates as at the token endpoint.
  const client = await authenticateClient(ctx, presentedCredentials(authorization, params));
  // RFC 7009 section 2.1: token is required.
  const token = params.get('token');
  if (token === undefined) throw new OAuthError('invalid_request', 'token is required');
  // RFC 7009 section 2.1: token_type_hint is only a hint; we look the token up by hash either way.
  const row = await ctx.db
    .selectFrom('oauth_tokens')
    .select(['id', 'kind', 'app_id', 'installation_id'])
    .where('token_hash', '=', hashSecret(token))
    .executeTakeFirst();
  // RFC 7009 section 2.2: an unknown token is not an error. Section 2.1: the token must belong to
  // the client; another client's token is left alone, and the answer does not say so.
  if (!row || row.app_id !== client.id) return;
  if (row.kind === 'refresh') {
    // RFC 7009 section 2.1 and spec 3.4: revoking a refresh token ends every token of the installation.
    await revokeInstallationTokens(ctx, row.installation_id);
    return;
  }
  // Spec 3.4: revoking an access token ends that token alone.
  await ctx.db
    .updateTable('oauth_tokens')
    .set({ revoked_at: ctx.clock.now() })
    .where('id', '=', row.id)
    .where('revoked_at', 'is', null)
    .execute();
}

import { sql } from 'kysely';
import type { AppContext } from '../../../context.ts';
import { constantTimeEqual, sha256Base64url } from '../../../lib/crypto.ts';
import { hashSecret } from '../../../lib/ids.ts';
import type { AppRecord } from '../../apps/registry.ts';
import type { Presented } from '../client-auth.ts';
import { OAuthError } from '../errors.ts';
import { type OAuthParams, requireParam } from '../params.ts';
import { CODE_VERIFIER, verifierMatches } from '../pkce.ts';
import { fastResource, resourceUrl, tokenRequestResource } from '../resource.ts';
import {
  agentRulesHold,
  approverStillMember,
  grantInstallations,
  revokeForReuse,
  spendAndIssue,
  spendAndIssueGrouped,
  type TokenResponse,
} from '../tokens.ts';

const invalidGrant = (reuseDetected = false) =>
  new OAuthError('invalid_grant', 'the code is invalid, expired, spent or not yours', { reuseDetected });

/** grant_type=authorization_code (OAuth 2.1 section 4.1.3), checked rule by rule. */
export async function authorizationCodeGrant(
  ctx: AppContext,
  client: AppRecord,
  params: OAuthParams,
): Promise<TokenResponse> {
  // RFC 6749 section 4.1.3: code and redirect_uri are required.
  const code = requireParam(params, 'code');
  const redirectUri = requireParam(params, 'redirect_uri', 2048);
  // RFC 7636 section 4.1 / OAuth 2.1 section 4.1.3: the verifier's shape is a request error.
  const verifier = requireParam(params, 'code_verifier');
  if (!CODE_VERIFIER.test(verifier)) {
    throw new OAuthError(
      'invalid_request',
      'code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~',
    );
  }

  // RFC 8707 section 2.2: the resource may be repeated, never changed.
  const wanted = tokenRequestResource(ctx.config, client, params);

  const codeHash = hashSecret(code);
  const row = await ctx.db
    .selectFrom('oauth_codes')
    .select([
      'app_id',
      'installation_id',
      'tenant_id',
      'redirect_uri',
      'code_challenge',
      'expires_at',
      'used_at',
      'resource',
    ])
    .where('code_hash', '=', codeHash)
    .executeTakeFirst();
  // RFC 6749 section 5.2: unknown (or uninstalled: codes go with their installation).
  if (!row) throw invalidGrant();
  // RFC 6749 section 4.1.3: the code was issued to this client.
  if (row.app_id !== client.id) throw invalidGrant();
  // RFC 6749 section 4.1.3: the same redirect_uri as in the authorization request.
  if (!constantTimeEqual(row.redirect_uri, redirectUri)) throw invalidGrant();
  // RFC 7636 section 4.6: the verifier hashes to the challenge.
  if (!verifierMatches(verifier, row.code_challenge)) throw invalidGrant();
  // OAuth 2.1 section 4.1.3 and 7.5.2: a second use, by a client that proved itself and its
  // verifier, revokes what the code gave. Before those proofs it is a plain invalid_grant, so a
  // thief holding only the code cannot log the real app out.
  if (row.used_at) {
    await revokeForReuse(ctx, row, client.id, 'authorization_code');
    throw invalidGrant(true);
  }
  // Spec section 8: a code lives 60 seconds.
  const now = ctx.clock.now();
  if (row.expires_at <= now) throw invalidGrant();
  if (wanted !== undefined && wanted !== row.resource) {
    throw new OAuthError(
      'invalid_target',
      `the code was issued for ${resourceUrl(ctx.config, row.resource)}`,
    );
  }

  const installations = await grantInstallations(ctx, 'oauth_codes', [codeHash]);
  const issued = await spendAndIssue(
    ctx,
    sql`UPDATE oauth_codes SET used_at = ${now}
      WHERE code_hash = ${codeHash} AND used_at IS NULL AND ${approverStillMember('oauth_codes', installations)}
        AND ${agentRulesHold('oauth_codes', sql`${client.developer_id === null}`, installations)}
      RETURNING app_id, installation_id, tenant_id, user_id, scopes, resource`,
    undefined,
    installations,
  );
  if (issued) return issued;
  // Lost the race to a concurrent exchange of the same code: that is a second use too.
  const after = await ctx.db
    .selectFrom('oauth_codes')
    .select('used_at')
    .where('code_hash', '=', codeHash)
    .executeTakeFirst();
  if (after?.used_at) {
    await revokeForReuse(ctx, row, client.id, 'authorization_code');
    throw invalidGrant(true);
  }
  throw invalidGrant();
}

/**
 * The happy path of a code exchange, in one statement with the exchanges that arrive with it (see
 * GRANTS in token-endpoint.ts and spendAndIssueGrouped): the PKCE check compares S256(verifier)
 * with the stored challenge, hashes both.
 */
export async function authorizationCodeFastPath(
  ctx: AppContext,
  presented: Presented,
  params: OAuthParams,
): Promise<TokenResponse | null> {
  const code = params.get('code');
  const redirectUri = params.get('redirect_uri');
  const verifier = params.get('code_verifier');
  if (!code || !redirectUri || !verifier || code.length > 512 || !CODE_VERIFIER.test(verifier)) return null;
  const resource = fastResource(ctx, params);
  if (resource === null) return null;
  return spendAndIssueGrouped(ctx, 'authorization_code', {
    grantHash: hashSecret(code),
    presented,
    redirectUri,
    challenge: sha256Base64url(verifier),
    ...(resource ? { resource } : {}),
  });
}

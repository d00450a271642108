import type { AppContext } from '../../context.ts';
import { hashSecret } from '../../lib/ids.ts';
import type { Principal } from '../accounts/access.ts';
import { intersectScopes, scopesOfRole } from '../accounts/roles.ts';
import { cancelWithheldDeliveries } from './installation-grants.ts';
import { parseScopes } from './tokens.ts';

/**
 * Resolves an `atk_live_` or `atk_test_` bearer (spec 5.1): it acts as the approving person, limited to the granted
 * scopes, to what the installation grants now AND to that person's current role, in one query. No
 * row (401) when the token is expired, revoked, its installation is gone or was approved since by
 * someone else, the person left the company, or the app is suspended.
 */
export async function resolveAppAccessToken(ctx: AppContext, secret: string): Promise<Principal | null> {
  const row = await ctx.db
    .selectFrom('oauth_tokens as t')
    // The token names its installation's tenant: one shard on Citus (decision 0071).
    .innerJoin('installations as i', (join) =>
      join.onRef('i.id', '=', 't.installation_id').onRef('i.tenant_id', '=', 't.tenant_id'),
    )
    .innerJoin('apps as a', 'a.id', 't.app_id')
    .innerJoin('memberships as m', (join) =>
      join.onRef('m.tenant_id', '=', 'i.tenant_id').onRef('m.user_id', '=', 't.user_id'),
    )
    .select([
      't.id',
      't.app_id',
      't.scopes',
      't.resource',
      'i.livemode',
      'i.scopes as installation_scopes',
      't.user_id',
      't.installation_id',
      'i.tenant_id',
      'i.customer_account_id',
      'm.role',
      'm.customer_account_id as member_account_id',
    ])
    .where('t.token_hash', '=', hashSecret(secret))
    .where('t.kind', '=', 'access')
    .where('t.revoked_at', 'is', null)
    .where('t.expires_at', '>', ctx.clock.now())
    .where('a.status', '!=', 'suspended')
    // An agent client (no developer) reaches /mcp only (CONTRACT.md, Agents).
    .where((eb) => eb.or([eb('t.resource', '=', 'mcp'), eb('a.developer_id', 'is not', null)]))
    .whereRef('i.user_id', '=', 't.user_id')
    .executeTakeFirst();
  if (!row) return null;
  // A person since narrowed to one merchant account reaches only that account's installation.
  if (row.member_account_id && row.member_account_id !== row.customer_account_id) return null;
  return {
    kind: 'app_token',
    tokenId: row.id,
    appId: row.app_id,
    resource: row.resource,
    access: {
      tenantId: row.tenant_id,
      customerAccountId: row.customer_account_id,
      livemode: row.livemode,
      scopes: new Set(
        intersectScopes(
          intersectScopes(parseScopes(row.scopes), new Set(parseScopes(row.installation_scopes))),
          scopesOfRole(row.role),
        ),
      ),
      installationId: row.installation_id,
      userId: row.user_id,
      actor: row.id,
    },
  };
}

/**
 * App access tokens authenticate API calls: the resolver for their prefixes. A token's hash is stored
 * under its mode's prefix only, so an `atk_test_` spelling of a live token finds nothing.
 */
export function registerOAuth(ctx: AppContext): void {
  ctx.tokenResolvers.set('atk_live_', resolveAppAccessToken);
  ctx.tokenResolvers.set('atk_test_', resolveAppAccessToken);
  // The installations a departing member approved receive nothing more (decision 0024).
  ctx.memberLeftHooks.push(async (trx, left) => {
    await cancelWithheldDeliveries(trx, left.tenantId, left.at);
  });
}

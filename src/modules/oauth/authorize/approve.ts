import type { AppContext } from '../../../context.ts';
import { addMs } from '../../../lib/clock.ts';
import { hashSecret, newSecret } from '../../../lib/ids.ts';
import { upsertInstallation } from '../../apps/registry.ts';
import { CODE_LIFETIME_MS } from '../lifetimes.ts';
import { grantableScopes, installTargets } from './accounts.ts';
import { type AuthorizationRequest, UntrustedRedirectError } from './request.ts';

/**
 * The person approved: installs (or updates the installation of) the app on the chosen account with
 * the requested scopes their role holds, and mints a single-use code (spec 2.3: atc_, 60 s) bound to
 * the PKCE challenge, the redirect URI and the installation. Only the code's hash is stored.
 */
export async function approveAuthorization(
  ctx: AppContext,
  request: AuthorizationRequest,
  userId: string,
  targetValue: string,
): Promise<string> {
  // The account comes from the form: it must be one the person manages integrations for, now.
  const target = (await installTargets(ctx, userId)).find((t) => t.value === targetValue);
  if (!target)
    throw new UntrustedRedirectError(
      'Choose a company or merchant account where you manage integrations.',
      403,
    );
  const { granted } = grantableScopes(request.scopes, target.role);
  if (granted.length === 0)
    throw new UntrustedRedirectError('Your role cannot grant any of the scopes this app asks for.', 403);
  const code = newSecret('atc_');
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const installation = await upsertInstallation(ctx, trx, {
      appId: request.app.id,
      tenantId: target.tenantId,
      customerAccountId: target.customerAccountId,
      userId,
      scopes: granted,
    });
    await trx
      .insertInto('oauth_codes')
      .values({
        code_hash: hashSecret(code),
        app_id: request.app.id,
        installation_id: installation.id,
        user_id: userId,
        redirect_uri: request.redirectUri,
        code_challenge: request.codeChallenge,
        scopes: JSON.stringify(granted),
        resource: request.resource,
        created_at: now,
        expires_at: addMs(now, CODE_LIFETIME_MS),
        used_at: null,
      })
      .execute();
  });
  return code;
}

import { type AppContext, runAfterCommit } from '../../../context.ts';
import { addMs } from '../../../lib/clock.ts';
import { hashSecret, newSecret } from '../../../lib/ids.ts';
import type { Scope } from '../../accounts/roles.ts';
import { sendScopesUpdated } from '../../app-events/scopes-updated.ts';
import { jsonArray, upsertInstallation } from '../../apps/registry.ts';
import { UntrustedRedirectError } from '../errors.ts';
import { CODE_LIFETIME_MS } from '../lifetimes.ts';
import { grantableScopes, installTargets } from './accounts.ts';
import type { AuthorizationRequest } from './request.ts';

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
  modeValue = 'test',
): Promise<string> {
  // The account comes from the form: it must be one the person manages integrations for, now.
  const target = (await installTargets(ctx, userId)).find((t) => t.value === targetValue);
  if (!target)
    throw new UntrustedRedirectError(
      'Choose a company or merchant account where you manage integrations.',
      403,
    );
  // CONTRACT.md (Agents): a client without a developer gets a grant for /mcp alone, whatever the
  // request says; each resource has its own grant (migration 0067).
  const agent = request.app.developer_id === null;
  const resource = agent ? 'mcp' : request.resource;
  // Optional scopes asked for at runtime add to what the installation holds (CONTRACT.md).
  const existing = request.widens
    ? await ctx.db
        .selectFrom('installations')
        .select(['id', 'scopes'])
        .where('app_id', '=', request.app.id)
        .where('tenant_id', '=', target.tenantId)
        .where(
          'customer_account_id',
          target.customerAccountId === null ? 'is' : '=',
          target.customerAccountId,
        )
        .where('resource', '=', resource)
        .executeTakeFirst()
    : undefined;
  const held = existing ? jsonArray<Scope>(existing.scopes) : [];
  const { granted } = grantableScopes([...new Set([...held, ...request.scopes])], target.role);
  // An MCP grant is for one mode, test unless the person picks live (CONTRACT.md, Agents).
  const livemode = resource === 'mcp' ? await agentMode(ctx, target.tenantId, modeValue) : true;
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
      livemode,
      agent,
      resource,
    });
    if (existing) {
      await sendScopesUpdated(ctx, trx, {
        appId: request.app.id,
        installationId: installation.id,
        tenantId: target.tenantId,
        customerAccountId: target.customerAccountId,
        before: held,
        after: granted,
      });
    }
    // An agent client approved once is kept (unapproved registrations are removed after 24 h).
    await trx
      .updateTable('agent_clients')
      .set({ first_approved_at: now })
      .where('app_id', '=', request.app.id)
      .where('first_approved_at', 'is', null)
      .execute();
    await trx
      .insertInto('oauth_codes')
      .values({
        code_hash: hashSecret(code),
        app_id: request.app.id,
        installation_id: installation.id,
        tenant_id: target.tenantId,
        user_id: userId,
        redirect_uri: request.redirectUri,
        code_challenge: request.codeChallenge,
        scopes: JSON.stringify(granted),
        resource,
        created_at: now,
        expires_at: addMs(now, CODE_LIFETIME_MS),
        used_at: null,
      })
      .execute();
  });
  if (existing) runAfterCommit(ctx);
  return code;
}

/** The mode an agent may be given: test, or live only for a live company whose agent_access allows it. */
async function agentMode(ctx: AppContext, tenantId: string, modeValue: string): Promise<boolean> {
  const company = await ctx.db
    .selectFrom('companies')
    .select(['live', 'agent_access'])
    .where('id', '=', tenantId)
    .executeTakeFirstOrThrow();
  const access = company.agent_access as { test?: boolean; live?: boolean };
  if (modeValue === 'live') {
    if (!company.live)
      throw new UntrustedRedirectError('This company is not live yet: agents can use test data only.', 403);
    if (access.live !== true)
      throw new UntrustedRedirectError("The company's agent access does not allow live data.", 403);
    return true;
  }
  if (access.test === false)
    throw new UntrustedRedirectError("The company's agent access does not allow test data.", 403);
  return false;
}

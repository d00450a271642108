import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { AppError } from '../../lib/errors.ts';
import { hashSecret, newId, newSecret } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import type { Principal } from './access.ts';
import { getCustomerAccountRow, requireRole } from './companies.ts';
import { allows, managesIntegrations, type Scope, scopesOfRole } from './roles.ts';
import type { ApiTokensTable } from './tables.ts';

export interface ApiToken {
  id: string;
  name: string;
  mode: 'live' | 'test';
  /** `v1`: works at the API; `mcp`: works only at the MCP server (a headless agent's token). */
  audience: 'v1' | 'mcp';
  scopes: Scope[];
  customer_account_id: string | null;
  /** The first characters, to recognise a token in a list. */
  token_hint: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

function parseScopes(value: string[] | string): Scope[] {
  return (typeof value === 'string' ? JSON.parse(value) : value) as Scope[];
}

type ApiTokenRow = Omit<ApiTokensTable, 'audience'> & { audience: 'v1' | 'mcp' };

function presentApiToken(row: ApiTokenRow): ApiToken {
  return {
    id: row.id,
    name: row.name,
    mode: row.mode,
    audience: row.audience,
    scopes: parseScopes(row.scopes),
    customer_account_id: row.customer_account_id,
    token_hint: row.token_hint,
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

export async function createApiToken(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  input: {
    name: string;
    mode: 'live' | 'test';
    audience?: 'v1' | 'mcp';
    scopes: Scope[];
    customer_account_id?: string | null;
  },
): Promise<ApiToken & { token: string }> {
  const membership = await requireRole(ctx, userId, tenantId, managesIntegrations);
  // A merchant admin makes tokens for its own account only.
  const accountId = membership.customer_account_id ?? input.customer_account_id ?? null;
  if (
    membership.customer_account_id &&
    input.customer_account_id &&
    input.customer_account_id !== accountId
  ) {
    throw new AppError('customer_account.not_found');
  }
  if (accountId) await getCustomerAccountRow(ctx, tenantId, accountId);
  const held = scopesOfRole(membership.role);
  const beyond = input.scopes.filter((scope) => !allows(held, scope));
  if (beyond.length > 0) {
    throw new AppError('auth.insufficient_scope', `Your role cannot grant ${beyond.join(', ')}`);
  }
  const token = newSecret(input.mode === 'live' ? 'sk_live_' : 'sk_test_');
  const row: ApiTokenRow = {
    id: newId('tok'),
    tenant_id: tenantId,
    name: input.name.trim(),
    token_hash: hashSecret(token),
    token_hint: `${token.slice(0, token.indexOf('_', 3) + 5)}…`,
    mode: input.mode,
    audience: input.audience ?? 'v1',
    scopes: JSON.stringify([...new Set(input.scopes)]),
    customer_account_id: accountId,
    created_by: userId,
    created_at: ctx.clock.now(),
    last_used_at: null,
    revoked_at: null,
  };
  await ctx.db.insertInto('api_tokens').values(row).execute();
  return { ...presentApiToken(row), token };
}

export async function listApiTokens(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  page: PageRequest = {},
): Promise<Page<ApiToken>> {
  const membership = await requireRole(ctx, userId, tenantId, managesIntegrations);
  let query = ctx.db.selectFrom('api_tokens').selectAll().where('tenant_id', '=', tenantId);
  if (membership.customer_account_id)
    query = query.where('customer_account_id', '=', membership.customer_account_id);
  return newestFirst(query, 'api_tokens', page, presentApiToken);
}

export async function revokeApiToken(ctx: AppContext, userId: string, tenantId: string, tokenId: string) {
  const membership = await requireRole(ctx, userId, tenantId, managesIntegrations);
  let query = ctx.db
    .updateTable('api_tokens')
    .set({ revoked_at: ctx.clock.now() })
    .where('id', '=', tokenId)
    .where('tenant_id', '=', tenantId)
    .where('revoked_at', 'is', null);
  if (membership.customer_account_id)
    query = query.where('customer_account_id', '=', membership.customer_account_id);
  const result = await query.executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) throw new AppError('api_token.not_found');
}

/** Resolves `sk_live_` and `sk_test_` tokens. */
export async function resolveApiToken(ctx: AppContext, secret: string): Promise<Principal | null> {
  const row = await ctx.db
    .selectFrom('api_tokens')
    .select([
      'id',
      'tenant_id',
      'mode',
      'audience',
      'scopes',
      'customer_account_id',
      'created_by',
      'last_used_at',
    ])
    .where('token_hash', '=', hashSecret(secret))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  const now = ctx.clock.now();
  // last_used_at is shown in the dashboard; a minute's precision spares a write on every call.
  if (!row.last_used_at || now.getTime() - row.last_used_at.getTime() > 60_000) {
    await ctx.db.updateTable('api_tokens').set({ last_used_at: now }).where('id', '=', row.id).execute();
  }
  return {
    kind: 'api_token',
    tokenId: row.id,
    resource: row.audience,
    access: {
      tenantId: row.tenant_id,
      customerAccountId: row.customer_account_id,
      livemode: row.mode === 'live',
      scopes: new Set(parseScopes(row.scopes)),
      installationId: null,
      userId: row.created_by,
      actor: row.id,
    },
  };
}

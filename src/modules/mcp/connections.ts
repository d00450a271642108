import { sql } from 'kysely';
import type { AppContext, Trx } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { requireRole } from '../accounts/companies.ts';
import { managesMembers } from '../accounts/roles.ts';
import { integrationScope } from '../apps/installations.ts';
import { jsonArray, removeInstallationGrants } from '../apps/registry.ts';

/** An agent's approved access to a company or merchant account (CONTRACT.md, Agents). */
export interface AgentConnection {
  id: string;
  /** `oauth`: an approved client's grant (agc_); `api_token`: an API token made for agents (tok_). */
  kind: 'oauth' | 'api_token';
  /** The client's id; null for an API token. */
  client_id: string | null;
  client_name: string;
  client_host: string | null;
  /** A registered client: its name is its own claim (a metadata document is served from its host). */
  self_described: boolean;
  mode: 'test' | 'live';
  scopes: string[];
  customer_account_id: string | null;
  approved_by: string;
  created_at: string;
  last_used_at: string | null;
}

/**
 * The host a person recognises the client by, and only one Waybill can stand behind: a metadata
 * document's own host (it was fetched from there), else the host a registered client returns to
 * (null for an app's own scheme). A registration's client_uri is its claim and never its host.
 */
export function clientHost(
  // null: a store app's /mcp grant (no agent_clients row), whose metadata is null too.
  source: 'metadata_document' | 'registration' | null,
  clientId: string,
  metadata: unknown,
): string | null {
  const meta = (typeof metadata === 'string' ? JSON.parse(metadata) : metadata) as {
    redirect_uris?: unknown;
  } | null;
  const redirects = Array.isArray(meta?.redirect_uris) ? (meta.redirect_uris as unknown[]) : [];
  const candidates = source === 'metadata_document' ? [clientId] : redirects;
  for (const candidate of candidates) {
    if (typeof candidate !== 'string' || !URL.canParse(candidate)) continue;
    const url = new URL(candidate);
    if ((url.protocol === 'https:' || url.protocol === 'http:') && url.host !== '') return url.host;
  }
  return null;
}

function connectionsOf(ctx: AppContext, tenantId: string, accountId: string | null) {
  let query = ctx.db
    .selectFrom('installations')
    .leftJoin('agent_clients', 'agent_clients.app_id', 'installations.app_id')
    .innerJoin('apps', 'apps.id', 'installations.app_id')
    .select([
      'installations.id',
      'installations.app_id',
      'installations.livemode',
      'installations.scopes',
      'installations.customer_account_id',
      'installations.user_id',
      'installations.created_at',
      'installations.last_used_at',
      'apps.name',
      'agent_clients.metadata',
      'agent_clients.source',
    ])
    .where('installations.tenant_id', '=', tenantId)
    // Every grant for /mcp, an agent client's or a store app's (migration 0067).
    .where('installations.resource', '=', 'mcp');
  if (accountId) query = query.where('installations.customer_account_id', '=', accountId);
  return query;
}

/**
 * The API tokens made for agents (audience `mcp`, CONTRACT.md Trust 3): listed and revoked with the
 * connections, in the same shape, so that one list holds everything that opens `/mcp`.
 */
function agentTokensOf(ctx: AppContext, tenantId: string, accountId: string | null) {
  let query = ctx.db
    .selectFrom('api_tokens')
    .select([
      'api_tokens.id',
      sql<string | null>`NULL::text`.as('app_id'),
      sql<boolean>`api_tokens.mode = 'live'`.as('livemode'),
      'api_tokens.scopes',
      'api_tokens.customer_account_id',
      sql<string>`COALESCE(api_tokens.created_by, '')`.as('user_id'),
      'api_tokens.created_at',
      'api_tokens.last_used_at',
      'api_tokens.name',
      sql<unknown>`NULL::jsonb`.as('metadata'),
      sql<'metadata_document' | 'registration' | null>`NULL::text`.as('source'),
      sql<'oauth' | 'api_token'>`'api_token'`.as('kind'),
    ])
    .where('api_tokens.tenant_id', '=', tenantId)
    .where('api_tokens.audience', '=', 'mcp')
    .where('api_tokens.revoked_at', 'is', null);
  if (accountId) query = query.where('api_tokens.customer_account_id', '=', accountId);
  return query;
}

/** GET /v1/companies/{tenant_id}/agent-connections: who manages integrations sees them. */
export async function listAgentConnections(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  page: PageRequest = {},
): Promise<Page<AgentConnection>> {
  const accountId = await integrationScope(ctx, userId, tenantId);
  const grants = connectionsOf(ctx, tenantId, accountId).select(
    sql<'oauth' | 'api_token'>`'oauth'`.as('kind'),
  );
  // The tokens' rows have the grants' columns, but a null app_id (no client), which the builder's
  // types cannot say of one operand: the mapper below reads app_id as nullable.
  const tokens = agentTokensOf(ctx, tenantId, accountId) as never;
  const both = ctx.db.selectFrom(grants.unionAll(tokens).as('c')).selectAll();
  return newestFirst(both, 'c', page, (row) => ({
    id: row.id,
    kind: row.kind,
    client_id: row.app_id as string | null,
    client_name: row.name,
    client_host: row.app_id ? clientHost(row.source, row.app_id, row.metadata) : null,
    self_described: row.source === 'registration',
    mode: row.livemode ? 'live' : 'test',
    scopes: jsonArray<string>(row.scopes),
    customer_account_id: row.customer_account_id,
    approved_by: row.user_id,
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
  }));
}

/** DELETE .../agent-connections/{id}: every code and token of it ends at once (removeInstallationGrants). */
export async function revokeAgentConnection(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  connectionId: string,
): Promise<void> {
  const accountId = await integrationScope(ctx, userId, tenantId);
  const now = ctx.clock.now();
  // An agent's API token (tok_): revoked as its list shows it, from this moment.
  const token = await agentTokensOf(ctx, tenantId, accountId)
    .where('api_tokens.id', '=', connectionId)
    .executeTakeFirst();
  if (token) {
    await ctx.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('api_tokens')
        .set({ revoked_at: now })
        .where('id', '=', connectionId)
        .where('tenant_id', '=', tenantId)
        .execute();
      await recordRevocation(trx, tenantId, userId, connectionId, null, now);
    });
    return;
  }
  const row = await connectionsOf(ctx, tenantId, accountId)
    .where('installations.id', '=', connectionId)
    .executeTakeFirst();
  if (!row) throw new AppError('agent_connection.not_found');
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('installation_records')
      .set({ uninstalled_at: now })
      .where('id', '=', connectionId)
      .where('tenant_id', '=', tenantId)
      .execute();
    const removed = await trx
      .deleteFrom('installations')
      .where('id', '=', connectionId)
      .where('tenant_id', '=', tenantId)
      .returning(['id', 'app_id', 'tenant_id', 'resource'])
      .executeTakeFirst();
    if (removed) await removeInstallationGrants(trx, removed);
    await recordRevocation(trx, tenantId, userId, connectionId, row.app_id, now);
  });
}

async function recordRevocation(
  trx: Trx,
  tenantId: string,
  userId: string,
  connectionId: string,
  clientId: string | null,
  now: Date,
): Promise<void> {
  await trx
    .insertInto('audit_events')
    .values({
      id: newId('aud'),
      tenant_id: tenantId,
      actor: userId,
      action: 'agent_connection.revoked',
      details: JSON.stringify({ connection_id: connectionId, client_id: clientId }),
      created_at: now,
    })
    .execute();
}

export interface AgentAccess {
  test: boolean;
  live: boolean;
}

export function agentAccessOf(value: unknown): AgentAccess {
  const parsed = (typeof value === 'string' ? JSON.parse(value) : value) as Partial<AgentAccess> | null;
  return { test: parsed?.test !== false, live: parsed?.live === true };
}

/** PATCH /v1/companies/{tenant_id} `agent_access`: owners and admins only. */
export async function setAgentAccess(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  change: Partial<AgentAccess>,
): Promise<void> {
  await requireRole(ctx, userId, tenantId, managesMembers);
  const current = await ctx.db
    .selectFrom('companies')
    .select('agent_access')
    .where('id', '=', tenantId)
    .executeTakeFirstOrThrow();
  const next = { ...agentAccessOf(current.agent_access), ...change };
  await ctx.db
    .updateTable('companies')
    .set({ agent_access: JSON.stringify(next), updated_at: ctx.clock.now() })
    .where('id', '=', tenantId)
    .execute();
}

import { AppError } from '../../lib/errors.ts';
import { allows, type Scope } from './roles.ts';

/**
 * What a caller may reach inside one company: the result of authenticating an API token, an app
 * access token, or a signed-in person acting in the dashboard. Services take this, never a request.
 */
export interface TenantAccess {
  tenantId: string;
  /** Set when the caller is limited to one merchant account. */
  customerAccountId: string | null;
  livemode: boolean;
  scopes: ReadonlySet<Scope>;
  /** Set for app access tokens: the installation the caller acts for. */
  installationId: string | null;
  /** The person behind the call, when there is one (the approver of an app, the dashboard user). */
  userId: string | null;
  /** Who acts, for audit: a token id or a person id. */
  actor: string;
}

export type Principal =
  | { kind: 'user'; userId: string; sessionId: string }
  | {
      kind: 'api_token';
      tokenId: string;
      /** Where the token works (CONTRACT.md, Trust 3): `v1` (the API) or `mcp` (a headless agent's). */
      resource: 'v1' | 'mcp';
      access: TenantAccess;
    }
  | {
      kind: 'app_token';
      tokenId: string;
      appId: string;
      /** RFC 8707: where the token works, `v1` (the API) or `mcp` (the MCP server), never both. */
      resource: 'v1' | 'mcp';
      access: TenantAccess;
    };

/** A stable key for what authenticated a call, used to scope idempotency keys. */
export function credentialKey(principal: Principal): string {
  return principal.kind === 'user' ? principal.sessionId : principal.tokenId;
}

export function requirePrincipal(principal: Principal | null): Principal {
  if (!principal) throw new AppError('auth.invalid_token', 'Send Authorization: Bearer <token>');
  return principal;
}

/** The caller must be a signed-in person (person's session token), never an API or app token. */
export function requireUser(principal: Principal | null): { userId: string; sessionId: string } {
  const p = requirePrincipal(principal);
  if (p.kind !== 'user') throw new AppError('auth.session_required');
  return p;
}

/** The caller must hold a tenant token (API or app) with the scope. */
export function requireAccess(principal: Principal | null, scope: Scope): TenantAccess {
  const p = requirePrincipal(principal);
  if (p.kind === 'user') {
    throw new AppError('auth.insufficient_scope', 'This call needs an API token or an app access token');
  }
  requireScope(p.access, scope);
  return p.access;
}

export function requireScope(access: TenantAccess, scope: Scope): void {
  if (!allows(access.scopes, scope)) {
    throw new AppError('auth.insufficient_scope', `This call needs the scope ${scope}`, {
      required_scope: scope,
    });
  }
}

/**
 * Whether a record of a company (and maybe of a merchant account) is visible to the caller.
 * Foreign records answer 404 like unknown ones, so ids do not leak.
 */
export function canSee(
  access: TenantAccess,
  record: { tenant_id: string; customer_account_id: string | null; livemode: boolean },
): boolean {
  if (record.tenant_id !== access.tenantId || record.livemode !== access.livemode) return false;
  return access.customerAccountId === null || record.customer_account_id === access.customerAccountId;
}

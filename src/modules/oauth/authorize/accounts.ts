import type { AppContext } from '../../../context.ts';
import { membershipsOfPerson } from '../../accounts/companies.ts';
import { SCOPES, type Scope, scopesOfRole } from '../../accounts/roles.ts';
import { jsonArray } from '../../apps/registry.ts';
import type { Resource } from '../resource.ts';
import type { AuthorizationRequest } from './request.ts';

/** A company or merchant account the person may install an app into. */
export interface InstallTarget {
  /** The form value: `tenantId` or `tenantId:accountId`. */
  value: string;
  tenantId: string;
  customerAccountId: string | null;
  label: string;
  role: string;
}

/**
 * Where the person manages integrations (spec 5.3): for a company owner or admin the company itself
 * and each of its merchant accounts; for a merchant admin only their own account.
 */
export async function installTargets(ctx: AppContext, userId: string): Promise<InstallTarget[]> {
  const managed = (await membershipsOfPerson(ctx, userId)).filter((m) => m.manages_integrations);
  const companyWide = managed.filter((m) => m.customer_account_id === null).map((m) => m.tenant_id);
  const accounts =
    companyWide.length === 0
      ? []
      : await ctx.db
          .selectFrom('customer_accounts')
          .select(['id', 'tenant_id', 'name'])
          .where('tenant_id', 'in', companyWide)
          .orderBy('name')
          .execute();
  return managed.flatMap((m): InstallTarget[] => {
    if (m.customer_account_id) {
      const label = `${m.company_name} · ${m.customer_account_name ?? m.customer_account_id}`;
      const value = `${m.tenant_id}:${m.customer_account_id}`;
      return [
        { value, tenantId: m.tenant_id, customerAccountId: m.customer_account_id, label, role: m.role },
      ];
    }
    return [
      {
        value: m.tenant_id,
        tenantId: m.tenant_id,
        customerAccountId: null,
        label: m.company_name,
        role: m.role,
      },
      ...accounts
        .filter((a) => a.tenant_id === m.tenant_id)
        .map((a) => ({
          value: `${m.tenant_id}:${a.id}`,
          tenantId: m.tenant_id,
          customerAccountId: a.id,
          label: `${m.company_name} · ${a.name}`,
          role: m.role,
        })),
    ];
  });
}

/** Spec 5.3: a person grants only scopes their role holds; the rest is left out of the grant. */
export function grantableScopes(
  requested: readonly Scope[],
  role: string,
): { granted: Scope[]; withheld: Scope[] } {
  const held = scopesOfRole(role);
  return {
    granted: requested.filter((s) => held.has(s)),
    withheld: requested.filter((s) => !held.has(s)),
  };
}

/**
 * An installed app asking for optional scopes asks to widen its installations: the accounts are
 * those where it is installed (all of them when it is in none), and `granted` is what each of
 * them holds already, left off the consent page's list (CONTRACT.md: only what is new is listed).
 */
export async function widenedTargets(
  ctx: AppContext,
  appId: string,
  targets: InstallTarget[],
  resource: Resource = 'v1',
): Promise<{ targets: InstallTarget[]; granted: Scope[] }> {
  const rows = await ctx.db
    .selectFrom('installations')
    .select(['tenant_id', 'customer_account_id', 'scopes'])
    .where('app_id', '=', appId)
    // The grant of the resource asked for (each has its own, migration 0067).
    .where('resource', '=', resource)
    .where('tenant_id', 'in', [...new Set(targets.map((t) => t.tenantId))])
    .execute();
  const held = new Map(
    rows.map((r) => [
      r.customer_account_id ? `${r.tenant_id}:${r.customer_account_id}` : r.tenant_id,
      jsonArray<Scope>(r.scopes),
    ]),
  );
  const installed = targets.filter((t) => held.has(t.value));
  if (installed.length === 0) return { targets, granted: [] };
  const [first, ...rest] = installed.map((t) => held.get(t.value) as Scope[]);
  const granted = (first ?? []).filter((scope) => rest.every((scopes) => scopes.includes(scope)));
  return { targets: installed, granted };
}

/**
 * For `/mcp`, the scopes the client registered but did not ask for (CONTRACT.md, Trust 3): offered
 * unticked, so a host that never steps up after a 403 can still write when the person allows it.
 */
export function offeredScopes(request: AuthorizationRequest): Scope[] {
  if (request.resource !== 'mcp') return [];
  return SCOPES.filter((s) => request.app.scopes.includes(s) && !request.scopes.includes(s));
}

import type { AppContext } from '../../../context.ts';
import { reviewingCompanies } from './rows.ts';
import { REVIEW_AFTER_MS } from './rules.ts';

export interface Eligibility {
  /** The companies that may review the app now (and have not yet). */
  companies: { tenant_id: string; company_name: string }[];
  /** The caller's companies' reviews of the app. */
  reviewed: string[];
}

/**
 * Who may review: an owner or admin of a company whose installation of the app has been in force
 * 7 days (CONTRACT.md). The installation's `created_at` is when it came into force; it is the same
 * row while the company keeps the app (re-approving does not restart it).
 */
export async function reviewEligibility(
  ctx: AppContext,
  userId: string,
  appId: string,
): Promise<Eligibility> {
  const tenants = await reviewingCompanies(ctx, userId);
  if (tenants.length === 0) return { companies: [], reviewed: [] };
  const since = new Date(ctx.clock.now().getTime() - REVIEW_AFTER_MS);
  const installed = await ctx.db
    .selectFrom('installations')
    .innerJoin('companies', 'companies.id', 'installations.tenant_id')
    .select(['installations.tenant_id', 'companies.name as company_name'])
    .where('installations.app_id', '=', appId)
    .where('installations.tenant_id', 'in', tenants)
    .where('installations.created_at', '<=', since)
    .groupBy(['installations.tenant_id', 'companies.name'])
    .orderBy('companies.name')
    .execute();
  const reviews = await ctx.db
    .selectFrom('app_reviews')
    .select(['id', 'tenant_id'])
    .where('app_id', '=', appId)
    .where('tenant_id', 'in', tenants)
    .execute();
  const done = new Set(reviews.map((r) => r.tenant_id));
  return {
    companies: installed.filter((row) => !done.has(row.tenant_id)),
    reviewed: reviews.map((r) => r.id),
  };
}

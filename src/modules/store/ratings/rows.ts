import type { AppContext, Trx } from '../../../context.ts';
import { AppError } from '../../../lib/errors.ts';
import type { AppReviewsTable } from '../tables.ts';
import { REVIEWING_ROLES } from './rules.ts';

// A review as the API shows it, and the queries that companies, developers and reviewers share.

/** A company's review of an app. */
export interface Review {
  id: string;
  app_id: string;
  rating: number;
  body: string;
  company_name: string;
  created_at: string;
  updated_at: string;
  reply: { body: string; created_at: string; updated_at: string } | null;
  /** Hidden by a reviewer: the store shows it only to its company and the app's developer, with why. */
  hidden: boolean;
  hidden_reason: string | null;
  hidden_at: string | null;
  /** The caller is an owner or admin of the company that wrote it (may edit or delete it). */
  mine: boolean;
}

export type ReviewRow = AppReviewsTable & { company_name: string };

export function present(row: ReviewRow, mine: boolean): Review {
  return {
    id: row.id,
    app_id: row.app_id,
    rating: row.rating,
    body: row.body,
    company_name: row.company_name,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    reply:
      row.reply_body !== null && row.replied_at
        ? {
            body: row.reply_body,
            created_at: row.replied_at.toISOString(),
            updated_at: (row.reply_updated_at ?? row.replied_at).toISOString(),
          }
        : null,
    hidden: row.hidden_at !== null,
    hidden_reason: row.hidden_reason,
    hidden_at: row.hidden_at?.toISOString() ?? null,
    mine,
  };
}

export function reviewsWithCompany(db: AppContext['db'] | Trx) {
  return db
    .selectFrom('app_reviews')
    .innerJoin('companies', 'companies.id', 'app_reviews.tenant_id')
    .selectAll('app_reviews')
    .select('companies.name as company_name');
}

export async function reviewRow(
  db: AppContext['db'] | Trx,
  appId: string,
  reviewId: string,
): Promise<ReviewRow> {
  const row = await reviewsWithCompany(db)
    .where('app_reviews.id', '=', reviewId)
    .where('app_reviews.app_id', '=', appId)
    .executeTakeFirst();
  if (!row) throw new AppError('review.not_found');
  return row;
}

export async function publishedAppId(ctx: AppContext, appId: string): Promise<string> {
  const row = await ctx.db
    .selectFrom('apps')
    .innerJoin('store_listings', 'store_listings.app_id', 'apps.id')
    .select('apps.id')
    .where('apps.id', '=', appId)
    .where('apps.status', '=', 'published')
    .executeTakeFirst();
  if (!row) throw new AppError('app.not_found');
  return row.id;
}

/** Companies where the person is an owner or admin (the ones whose reviews they write and edit). */
export async function reviewingCompanies(ctx: AppContext, userId: string): Promise<string[]> {
  const rows = await ctx.db
    .selectFrom('memberships')
    .select('tenant_id')
    .where('user_id', '=', userId)
    .where('role', 'in', REVIEWING_ROLES)
    .where('customer_account_id', 'is', null)
    .execute();
  return rows.map((row) => row.tenant_id);
}

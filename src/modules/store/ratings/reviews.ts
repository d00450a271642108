import { sql } from 'kysely';
import type { AppContext, Trx } from '../../../context.ts';
import { newestFirst } from '../../../db/paging.ts';
import { DAY } from '../../../lib/clock.ts';
import { AppError, validationError } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import type { Page, PageRequest } from '../../../lib/paging.ts';
import { requireReviewer } from '../../apps/moderation.ts';
import { getApp } from '../../apps/service.ts';
import { characterCount } from '../listing/rules.ts';
import type { AppReviewsTable } from '../tables.ts';

/** CONTRACT.md "Store trust". */
export const REVIEW_BODY_MAX = 2000;
export const REPLY_BODY_MAX = 2000;
export const HIDE_REASON_MAX = 500;
/** A company reviews an app it has used: its installation has been in force this long. */
export const REVIEW_AFTER_MS = 7 * DAY;
const REVIEWING_ROLES = ['owner', 'admin'];

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

type ReviewRow = AppReviewsTable & { company_name: string };

function present(row: ReviewRow, mine: boolean): Review {
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

function reviewsWithCompany(db: AppContext['db'] | Trx) {
  return db
    .selectFrom('app_reviews')
    .innerJoin('companies', 'companies.id', 'app_reviews.tenant_id')
    .selectAll('app_reviews')
    .select('companies.name as company_name');
}

/** The text as stored: trimmed, 1 to `max` characters as people count them. */
function text(value: string, path: string, max: number): string {
  const trimmed = value.trim();
  const length = characterCount(trimmed);
  if (length === 0)
    throw validationError([{ path, message: 'must not be empty' }], `${path} must not be empty`);
  if (length > max)
    throw validationError(
      [{ path, message: `is longer than ${max} characters` }],
      `${path} is longer than ${max} characters`,
    );
  return trimmed;
}

function checkRating(rating: number): number {
  if (!Number.isInteger(rating) || rating < 1 || rating > 5) {
    throw validationError(
      [{ path: '/rating', message: 'must be a whole number from 1 to 5' }],
      'Give 1 to 5 stars',
    );
  }
  return rating;
}

async function publishedAppId(ctx: AppContext, appId: string): Promise<string> {
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
async function reviewingCompanies(ctx: AppContext, userId: string): Promise<string[]> {
  const rows = await ctx.db
    .selectFrom('memberships')
    .select('tenant_id')
    .where('user_id', '=', userId)
    .where('role', 'in', REVIEWING_ROLES)
    .where('customer_account_id', 'is', null)
    .execute();
  return rows.map((row) => row.tenant_id);
}

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

/**
 * The app's review stats, recomputed from its shown reviews. Called in every review write's
 * transaction after `lockStats`: the lock makes the writes to one app wait for each other, and
 * on PostgreSQL (read committed) each statement sees what the transactions before it committed,
 * so the counts are exact however many companies write at once.
 */
async function lockStats(trx: Trx, appId: string): Promise<void> {
  await trx
    .insertInto('app_store_stats')
    .values({ app_id: appId })
    .onConflict((oc) => oc.doNothing())
    .execute();
  await trx.selectFrom('app_store_stats').select('app_id').where('app_id', '=', appId).forUpdate().execute();
}

async function recomputeStats(trx: Trx, appId: string): Promise<void> {
  await sql`UPDATE app_store_stats SET
      review_count = s.total, rating_sum = s.total_stars, rating_1 = s.r1, rating_2 = s.r2,
      rating_3 = s.r3, rating_4 = s.r4, rating_5 = s.r5,
      rating_avg = CASE WHEN s.total = 0 THEN 0 ELSE s.total_stars::float8 / s.total END
    FROM (SELECT count(*)::int AS total, coalesce(sum(rating), 0)::int AS total_stars,
        (count(*) FILTER (WHERE rating = 1))::int AS r1, (count(*) FILTER (WHERE rating = 2))::int AS r2,
        (count(*) FILTER (WHERE rating = 3))::int AS r3, (count(*) FILTER (WHERE rating = 4))::int AS r4,
        (count(*) FILTER (WHERE rating = 5))::int AS r5
      FROM app_reviews WHERE app_id = ${appId} AND hidden_at IS NULL) AS s
    WHERE app_store_stats.app_id = ${appId}`.execute(trx);
}

function inStatsLock<T>(ctx: AppContext, appId: string, work: (trx: Trx) => Promise<T>): Promise<T> {
  return ctx.db.transaction().execute(async (trx) => {
    await lockStats(trx, appId);
    const result = await work(trx);
    await recomputeStats(trx, appId);
    return result;
  });
}

async function reviewRow(db: AppContext['db'] | Trx, appId: string, reviewId: string): Promise<ReviewRow> {
  const row = await reviewsWithCompany(db)
    .where('app_reviews.id', '=', reviewId)
    .where('app_reviews.app_id', '=', appId)
    .executeTakeFirst();
  if (!row) throw new AppError('review.not_found');
  return row;
}

export interface ReviewInput {
  rating: number;
  body: string;
  tenant_id?: string;
}

/** POST /v1/store/apps/{id}/reviews. */
export async function createReview(
  ctx: AppContext,
  userId: string,
  appId: string,
  input: ReviewInput,
): Promise<Review> {
  const id = await publishedAppId(ctx, appId);
  checkRating(input.rating);
  const body = text(input.body, '/body', REVIEW_BODY_MAX);
  const eligibility = await reviewEligibility(ctx, userId, id);
  const tenants = await reviewingCompanies(ctx, userId);
  const tenantId =
    input.tenant_id ?? (eligibility.companies.length === 1 ? eligibility.companies[0]?.tenant_id : undefined);
  if (!tenantId) {
    if (eligibility.companies.length > 1) {
      throw validationError(
        [{ path: '/tenant_id', message: 'say which of your companies writes the review' }],
        'Several of your companies may review this app: give tenant_id',
      );
    }
    if (eligibility.reviewed.length > 0) {
      throw new AppError('review.already_exists', 'Your company has reviewed this app: edit that review', {
        review_id: eligibility.reviewed[0],
      });
    }
    throw new AppError('review.not_eligible');
  }
  if (!tenants.includes(tenantId)) throw new AppError('review.not_eligible');
  if (!eligibility.companies.some((c) => c.tenant_id === tenantId)) {
    const existing = await ctx.db
      .selectFrom('app_reviews')
      .select('id')
      .where('app_id', '=', id)
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst();
    if (existing) {
      throw new AppError('review.already_exists', 'Your company has reviewed this app: edit that review', {
        review_id: existing.id,
      });
    }
    throw new AppError('review.not_eligible');
  }
  const now = ctx.clock.now();
  const reviewId = newId('rev');
  await inStatsLock(ctx, id, async (trx) => {
    const inserted = await trx
      .insertInto('app_reviews')
      .values({
        id: reviewId,
        app_id: id,
        tenant_id: tenantId,
        author_id: userId,
        rating: input.rating,
        body,
        created_at: now,
        updated_at: now,
        reply_body: null,
        reply_author_id: null,
        replied_at: null,
        reply_updated_at: null,
        hidden_at: null,
        hidden_reason: null,
        hidden_by: null,
      })
      .onConflict((oc) => oc.columns(['app_id', 'tenant_id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted)
      throw new AppError('review.already_exists', 'Your company has reviewed this app: edit that review');
  });
  return present(await reviewRow(ctx.db, id, reviewId), true);
}

/** The review, when the caller is an owner or admin of the company that wrote it. */
async function ownReview(
  ctx: AppContext,
  userId: string,
  appId: string,
  reviewId: string,
): Promise<ReviewRow> {
  const row = await reviewRow(ctx.db, appId, reviewId);
  const tenants = await reviewingCompanies(ctx, userId);
  if (!tenants.includes(row.tenant_id)) throw new AppError('review.not_found');
  return row;
}

/** PATCH /v1/store/apps/{id}/reviews/{review_id}: the company's owners and admins edit it. */
export async function updateReview(
  ctx: AppContext,
  userId: string,
  appId: string,
  reviewId: string,
  input: { rating?: number; body?: string },
): Promise<Review> {
  const row = await ownReview(ctx, userId, appId, reviewId);
  if (input.rating !== undefined) checkRating(input.rating);
  const body = input.body !== undefined ? text(input.body, '/body', REVIEW_BODY_MAX) : undefined;
  await inStatsLock(ctx, row.app_id, async (trx) => {
    await trx
      .updateTable('app_reviews')
      .set({
        ...(input.rating !== undefined ? { rating: input.rating } : {}),
        ...(body !== undefined ? { body } : {}),
        updated_at: ctx.clock.now(),
      })
      .where('id', '=', row.id)
      .execute();
  });
  return present(await reviewRow(ctx.db, row.app_id, row.id), true);
}

/** DELETE /v1/store/apps/{id}/reviews/{review_id}. */
export async function deleteReview(
  ctx: AppContext,
  userId: string,
  appId: string,
  reviewId: string,
): Promise<void> {
  const row = await ownReview(ctx, userId, appId, reviewId);
  await inStatsLock(ctx, row.app_id, async (trx) => {
    await trx.deleteFrom('app_reviews').where('id', '=', row.id).execute();
  });
}

/**
 * GET /v1/store/apps/{id}/reviews: the shown reviews, newest first, with replies; a review hidden
 * by a reviewer appears (marked, with the reason) only to its own company's owners and admins.
 */
export async function listReviews(
  ctx: AppContext,
  userId: string,
  appId: string,
  page: PageRequest,
): Promise<Page<Review>> {
  const id = await publishedAppId(ctx, appId);
  const tenants = await reviewingCompanies(ctx, userId);
  const query = reviewsWithCompany(ctx.db)
    .where('app_reviews.app_id', '=', id)
    .where((eb) =>
      tenants.length > 0
        ? eb.or([eb('app_reviews.hidden_at', 'is', null), eb('app_reviews.tenant_id', 'in', tenants)])
        : eb('app_reviews.hidden_at', 'is', null),
    );
  return newestFirst(query, 'app_reviews', page, (row) => present(row, tenants.includes(row.tenant_id)));
}

/** GET /v1/developer/apps/{id}/reviews: every review of the developer's app, hidden ones with why. */
export async function developerReviews(
  ctx: AppContext,
  developerId: string,
  appId: string,
  page: PageRequest,
): Promise<Page<Review>> {
  const app = await getApp(ctx, developerId, appId);
  return newestFirst(
    reviewsWithCompany(ctx.db).where('app_reviews.app_id', '=', app.id),
    'app_reviews',
    page,
    (row) => present(row, false),
  );
}

/** PUT /v1/developer/apps/{id}/reviews/{review_id}/reply: one reply per review, editable. */
export async function replyToReview(
  ctx: AppContext,
  developerId: string,
  appId: string,
  reviewId: string,
  input: { body: string },
): Promise<Review> {
  const app = await getApp(ctx, developerId, appId);
  const row = await reviewRow(ctx.db, app.id, reviewId);
  const body = text(input.body, '/body', REPLY_BODY_MAX);
  const now = ctx.clock.now();
  await ctx.db
    .updateTable('app_reviews')
    .set({
      reply_body: body,
      reply_author_id: developerId,
      replied_at: row.replied_at ?? now,
      reply_updated_at: now,
    })
    .where('id', '=', row.id)
    .execute();
  return present(await reviewRow(ctx.db, app.id, row.id), false);
}

/**
 * POST /v1/review/reviews/{review_id}/hide: a reviewer takes a review off the store with a
 * reason; the rating leaves the average. `/show` puts it back.
 */
export async function setReviewHidden(
  ctx: AppContext,
  reviewerId: string,
  reviewId: string,
  hide: { reason: string } | null,
): Promise<Review> {
  await requireReviewer(ctx, reviewerId);
  const reason = hide ? text(hide.reason, '/reason', HIDE_REASON_MAX) : null;
  const found = await ctx.db
    .selectFrom('app_reviews')
    .select('app_id')
    .where('id', '=', reviewId)
    .executeTakeFirst();
  if (!found) throw new AppError('review.not_found');
  await inStatsLock(ctx, found.app_id, async (trx) => {
    await trx
      .updateTable('app_reviews')
      .set({
        hidden_at: hide ? ctx.clock.now() : null,
        hidden_reason: reason,
        hidden_by: hide ? reviewerId : null,
      })
      .where('id', '=', reviewId)
      .execute();
  });
  return present(await reviewRow(ctx.db, found.app_id, reviewId), false);
}

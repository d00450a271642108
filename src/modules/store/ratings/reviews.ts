import type { AppContext } from '../../../context.ts';
import { newestFirst } from '../../../db/paging.ts';
import { AppError, validationError } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import type { Page, PageRequest } from '../../../lib/paging.ts';
import { reviewEligibility } from './eligibility.ts';
import {
  present,
  publishedAppId,
  type Review,
  type ReviewRow,
  reviewingCompanies,
  reviewRow,
  reviewsWithCompany,
} from './rows.ts';
import { checkRating, REVIEW_BODY_MAX, reviewText } from './rules.ts';
import { inStatsLock } from './stats.ts';

/** A company's side of ratings: it writes, edits and deletes its review, and reads the app's. */
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
  const body = reviewText(input.body, '/body', REVIEW_BODY_MAX);
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
  const body = input.body !== undefined ? reviewText(input.body, '/body', REVIEW_BODY_MAX) : undefined;
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

import type { AppContext } from '../../../context.ts';
import { newestFirst } from '../../../db/paging.ts';
import type { Page, PageRequest } from '../../../lib/paging.ts';
import { getApp } from '../../apps/service.ts';
import { present, type Review, reviewRow, reviewsWithCompany } from './rows.ts';
import { REPLY_BODY_MAX, reviewText } from './rules.ts';

/** The developer's side of ratings: every review of their app, and one reply to each. */
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
  const body = reviewText(input.body, '/body', REPLY_BODY_MAX);
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

import type { AppContext } from '../../../context.ts';
import { AppError } from '../../../lib/errors.ts';
import { requireReviewer } from '../../apps/moderation.ts';
import { present, type Review, reviewRow } from './rows.ts';
import { HIDE_REASON_MAX, reviewText } from './rules.ts';
import { inStatsLock } from './stats.ts';

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
  const reason = hide ? reviewText(hide.reason, '/reason', HIDE_REASON_MAX) : null;
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

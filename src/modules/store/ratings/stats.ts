import { sql } from 'kysely';
import type { AppContext, Trx } from '../../../context.ts';

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

export function inStatsLock<T>(ctx: AppContext, appId: string, work: (trx: Trx) => Promise<T>): Promise<T> {
  return ctx.db.transaction().execute(async (trx) => {
    await lockStats(trx, appId);
    const result = await work(trx);
    await recomputeStats(trx, appId);
    return result;
  });
}

import type { AppContext } from '../../../context.ts';
import { oldestFirst } from '../../../db/paging.ts';
import { AppError } from '../../../lib/errors.ts';
import type { Page, PageRequest } from '../../../lib/paging.ts';
import { conflictOfInterest, requireReviewer } from '../../apps/moderation.ts';
import { type App, getApp } from '../../apps/service.ts';
import { listingOf, publishedMediaNames } from '../catalogue/listings.ts';
import type { Listing } from '../listing/rules.ts';
import type { MediaSet } from '../media/images.ts';
import { mediaSet } from '../media/service.ts';
import { publishSubmission } from '../publication/service.ts';
import { presentSubmission, type Submission, WAITING } from '../submissions/service.ts';
import type { AppSubmissionsTable, SubmissionStatus } from '../tables.ts';

export const DECISIONS = ['approved', 'rejected', 'changes_requested'] as const;
export type Decision = (typeof DECISIONS)[number];

/** Why this reviewer may not decide on the app (apps/moderation.ts conflictOfInterest), or null. */
async function conflictOnApp(ctx: AppContext, reviewerId: string, appId: string): Promise<string | null> {
  const app = await ctx.db
    .selectFrom('apps')
    .select('developer_id')
    .where('id', '=', appId)
    .executeTakeFirstOrThrow();
  return conflictOfInterest(ctx.db, reviewerId, app.developer_id);
}

async function refuseConflict(ctx: AppContext, reviewerId: string, appId: string): Promise<void> {
  const conflict = await conflictOnApp(ctx, reviewerId, appId);
  if (conflict) throw new AppError('review.conflict_of_interest', conflict);
}

async function submissionRow(ctx: AppContext, submissionId: string): Promise<AppSubmissionsTable> {
  const row = await ctx.db
    .selectFrom('app_submissions')
    .selectAll()
    .where('id', '=', submissionId)
    .executeTakeFirst();
  if (!row) throw new AppError('submission.not_found');
  return row;
}

export type QueueItem = Submission & { app_name: string; developer_email: string };

/** The review queue, oldest first: one status, or every waiting one (submitted and in_review). */
export async function reviewQueue(
  ctx: AppContext,
  reviewerId: string,
  filter: PageRequest & { status?: SubmissionStatus },
): Promise<Page<QueueItem>> {
  await requireReviewer(ctx, reviewerId);
  const query = ctx.db
    .selectFrom('app_submissions')
    .innerJoin('apps', 'apps.id', 'app_submissions.app_id')
    .innerJoin('users', 'users.id', 'apps.developer_id')
    .selectAll('app_submissions')
    .select(['apps.name as app_name', 'users.email as developer_email'])
    .where('app_submissions.status', 'in', filter.status ? [filter.status] : WAITING);
  return oldestFirst(query, 'app_submissions', filter, (row) => {
    const { app_name, developer_email, ...submission } = row;
    return { ...presentSubmission(ctx, submission), app_name, developer_email };
  });
}

/** The reviewed values of the live app, beside which the console shows the snapshot. */
export type LiveValues = Pick<
  App,
  | 'name'
  | 'description'
  | 'homepage_url'
  | 'privacy_url'
  | 'support_url'
  | 'redirect_uris'
  | 'scopes'
  | 'events_url'
  | 'status'
>;

export interface ReviewedSubmission extends Submission {
  developer: { id: string; email: string; name: string };
  /** The live app's values now. */
  live: LiveValues;
  /** The store listing now (null before the first approval). */
  live_listing: Listing | null;
  /** The store's icon and screenshots now, beside the submitted ones. */
  live_media: MediaSet;
  /** The fields whose submitted value differs from the live one. */
  changes: string[];
  /** Why this reviewer may not start or decide it, or null. */
  conflict: string | null;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export async function submissionForReview(
  ctx: AppContext,
  reviewerId: string,
  submissionId: string,
): Promise<ReviewedSubmission> {
  await requireReviewer(ctx, reviewerId);
  const row = await submissionRow(ctx, submissionId);
  const submission = presentSubmission(ctx, row);
  const owner = await ctx.db
    .selectFrom('apps')
    .innerJoin('users', 'users.id', 'apps.developer_id')
    .select(['users.id', 'users.email', 'users.name'])
    .where('apps.id', '=', row.app_id)
    .executeTakeFirstOrThrow();
  const app = await getApp(ctx, owner.id, row.app_id);
  const live: LiveValues = {
    name: app.name,
    description: app.description,
    homepage_url: app.homepage_url,
    privacy_url: app.privacy_url,
    support_url: app.support_url,
    redirect_uris: app.redirect_uris,
    scopes: app.scopes,
    events_url: app.events_url,
    status: app.status,
  };
  const submitted: Record<string, unknown> = { ...submission.app, events_url: submission.events_url };
  const changes = Object.keys(submitted).filter(
    (field) => !same(submitted[field], live[field as keyof LiveValues]),
  );
  return {
    ...submission,
    developer: owner,
    live,
    live_listing: await listingOf(ctx, row.app_id),
    live_media: mediaSet(ctx, row.app_id, await publishedMediaNames(ctx, row.app_id)),
    changes,
    conflict: await conflictOnApp(ctx, reviewerId, row.app_id),
  };
}

function invalidState(row: AppSubmissionsTable, wanted: string): AppError {
  return new AppError('submission.invalid_state', `The submission is ${row.status}, not ${wanted}`, {
    submission_status: row.status,
  });
}

/** submitted -> in_review (spec 3.1). */
export async function startReview(
  ctx: AppContext,
  reviewerId: string,
  submissionId: string,
): Promise<Submission> {
  await requireReviewer(ctx, reviewerId);
  const current = await submissionRow(ctx, submissionId);
  await refuseConflict(ctx, reviewerId, current.app_id);
  const now = ctx.clock.now();
  const row = await ctx.db
    .updateTable('app_submissions')
    .set({ status: 'in_review', reviewer_id: reviewerId, started_at: now, updated_at: now })
    .where('id', '=', current.id)
    .where('status', '=', 'submitted')
    .returningAll()
    .executeTakeFirst();
  if (!row) throw invalidState(await submissionRow(ctx, submissionId), 'submitted');
  return presentSubmission(ctx, row);
}

/**
 * in_review -> approved, rejected or changes_requested, with the note the developer reads.
 * Approval publishes in the same transaction.
 */
export async function decide(
  ctx: AppContext,
  reviewerId: string,
  submissionId: string,
  input: { decision: Decision; note?: string | null },
): Promise<Submission> {
  await requireReviewer(ctx, reviewerId);
  const current = await submissionRow(ctx, submissionId);
  await refuseConflict(ctx, reviewerId, current.app_id);
  const note = input.note?.trim() || null;
  if (input.decision !== 'approved' && !note) {
    throw new AppError(
      'validation.failed',
      'Say what to fix: a rejection or a request for changes needs a note',
      {
        errors: [{ path: '/note', message: 'required when the decision is not approved' }],
      },
    );
  }
  return ctx.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('app_submissions')
      .selectAll()
      .where('id', '=', current.id)
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (row.status !== 'in_review') throw invalidState(row, 'in_review');
    if (input.decision === 'approved') {
      const app = await trx
        .selectFrom('apps')
        .select('status')
        .where('id', '=', row.app_id)
        .forUpdate()
        .executeTakeFirstOrThrow();
      if (app.status === 'suspended')
        throw new AppError('app.suspended', 'A suspended app cannot be published');
      await publishSubmission(ctx, trx, row);
    }
    const now = ctx.clock.now();
    const decided = await trx
      .updateTable('app_submissions')
      .set({
        status: input.decision,
        reviewer_id: reviewerId,
        reviewer_note: note,
        decided_at: now,
        updated_at: now,
      })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return presentSubmission(ctx, decided);
  });
}

/** The one check of who reviews lives with app moderation; the console and the review API use it. */
export { requireReviewer };

import { type SqlBool, sql } from 'kysely';
import { type AppContext, runAfterCommit, type Trx } from '../../context.ts';
import { cancelQueued } from '../../delivery/lifecycle.ts';
import { DAY } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { PLATFORM_TENANT } from '../accounts/tables.ts';
import { isReviewer } from '../accounts/users.ts';
import type { AppsTable } from '../oauth/tables.ts';
import { type App, presentApp } from './service.ts';

export type ModerationAction = 'suspend' | 'delist' | 'reinstate';

/** App events and webhooks are retried for about three days; what was held longer is not sent. */
const HELD_WINDOW_MS = 3 * DAY;

/**
 * Only people listed in WAYBILL_REVIEWER_EMAILS, with that address verified, review and moderate
 * (CONTRACT.md): a listed person who has not opened the verification link yet is told so (403
 * `auth.email_not_verified`, as is anyone unverified, listed or not), so whoever signs up first
 * with a colleague's address gains nothing and learns nothing.
 */
export async function requireReviewer(ctx: AppContext, userId: string): Promise<void> {
  const row = await ctx.db
    .selectFrom('users')
    .select(['email', 'demo_reviewer', 'email_verified_at'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!row) throw new AppError('auth.insufficient_scope', 'Only reviewers of the App Store can do this');
  // Unverified: one answer whether or not the address is listed, so that the answer does not tell
  // a stranger who signed up with an address whether it is a reviewer's.
  if (row.email_verified_at === null)
    throw new AppError(
      'auth.email_not_verified',
      'Reviewing waits for your e-mail address to be confirmed: open the link sent to it',
    );
  if (!isReviewer(ctx, row))
    throw new AppError('auth.insufficient_scope', 'Only reviewers of the App Store can do this');
}

/**
 * Why this reviewer may not judge an app of this developer, or null: their own app, or the app of
 * someone who shares a company with them. Reviews and moderation (suspend, delist, reinstate) alike.
 */
export async function conflictOfInterest(
  db: Trx | AppContext['db'],
  reviewerId: string,
  developerId: string | null,
): Promise<string | null> {
  // An agent client (issue 31) has no developer, and no listing to review.
  if (developerId === null) return null;
  if (developerId === reviewerId) return 'You cannot review your own app.';
  const shared = await db
    .selectFrom('memberships as mine')
    .innerJoin('memberships as theirs', 'theirs.tenant_id', 'mine.tenant_id')
    .select('mine.tenant_id')
    .where('mine.user_id', '=', reviewerId)
    .where('theirs.user_id', '=', developerId)
    .executeTakeFirst();
  return shared
    ? 'You cannot review an app of your own company: its developer is in one of your companies.'
    : null;
}

/**
 * Holds (or lets go) everything waiting for the app: its events target and its installations' endpoints.
 * An endpoint meets its installation on the company too, which Citus needs to join them.
 */
async function holdTargets(trx: Trx, appId: string, held: boolean, now: Date): Promise<void> {
  await sql`
    UPDATE webhook_endpoints e SET held = ${held}, updated_at = ${now.toISOString()}::timestamptz
    WHERE e.app_id = ${appId} OR EXISTS (
      SELECT 1 FROM installations i
      WHERE i.id = e.installation_id AND i.tenant_id = e.tenant_id AND i.app_id = ${appId})`.execute(trx);
}

/** What was held past the retry window is cancelled rather than sent days late. */
async function cancelStale(trx: Trx, appId: string, now: Date): Promise<void> {
  const heldSince = new Date(now.getTime() - HELD_WINDOW_MS).toISOString();
  // The app's events target, its subscription targets and its installations' endpoints.
  await cancelQueued(
    trx,
    sql<SqlBool>`d.created_at < ${heldSince}::timestamptz AND EXISTS (
      SELECT 1 FROM webhook_endpoints e
      WHERE e.id = d.endpoint_id AND e.tenant_id = d.tenant_id AND (e.app_id = ${appId} OR EXISTS (
        SELECT 1 FROM installations i
        WHERE i.id = e.installation_id AND i.tenant_id = e.tenant_id AND i.app_id = ${appId})))`,
    now,
  );
}

/** The status the app had before its latest suspension (reinstating gives it back). */
async function statusBeforeSuspension(trx: Trx, appId: string): Promise<AppsTable['status']> {
  const row = await trx
    .selectFrom('audit_events')
    .select(sql<AppsTable['status'] | null>`details->>'previous_status'`.as('previous'))
    // A moderation is the platform's (moderateApp): one shard on Citus.
    .where('tenant_id', '=', PLATFORM_TENANT)
    .where('action', '=', 'app.suspended')
    .where(sql`details->>'app_id'`, '=', appId)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
  return row?.previous && row.previous !== 'suspended' ? row.previous : 'private';
}

/**
 * Suspend, delist or reinstate an app (spec 3.2), with the reviewer's reason as an audit event.
 * Suspension stops at once its tokens (they are refused while the app is suspended), the token
 * endpoint (invalid_client) and everything waiting for its targets (held, not lost); reinstating
 * restores all of it without a new consent and sends what was held inside its retry window.
 * Delisting only takes the app off the store: installations keep working.
 */
export async function moderateApp(
  ctx: AppContext,
  reviewerId: string,
  appId: string,
  action: ModerationAction,
  reason: string,
): Promise<App> {
  await requireReviewer(ctx, reviewerId);
  const why = reason.trim();
  if (!why) {
    throw new AppError('validation.failed', 'Give a reason: the developer and the audit log read it', {
      errors: [{ path: '/reason', message: 'must not be empty or blank' }],
    });
  }
  const now = ctx.clock.now();
  const updated = await ctx.db.transaction().execute(async (trx) => {
    const app = await trx
      .selectFrom('apps')
      .selectAll()
      .where('id', '=', appId)
      .forUpdate()
      .executeTakeFirst();
    if (!app) throw new AppError('app.not_found');
    const conflict = await conflictOfInterest(trx, reviewerId, app.developer_id);
    if (conflict) throw new AppError('review.conflict_of_interest', conflict);
    let next: AppsTable['status'];
    if (action === 'suspend') {
      if (app.status === 'suspended')
        throw new AppError('app.invalid_status', 'The app is already suspended');
      next = 'suspended';
    } else if (action === 'delist') {
      if (app.status !== 'published')
        throw new AppError('app.invalid_status', 'Only a published app is delisted');
      next = 'delisted';
    } else {
      if (app.status === 'suspended') next = await statusBeforeSuspension(trx, appId);
      else if (app.status === 'delisted') next = 'published';
      else throw new AppError('app.invalid_status', 'Only a suspended or delisted app is reinstated');
    }
    // The app (a reference table) is written before its targets: on Citus no reference table may
    // be written after a write to many shards in the same transaction.
    const changed = await trx
      .updateTable('apps')
      .set({ status: next, updated_at: now })
      .where('id', '=', appId)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (action === 'suspend') await holdTargets(trx, appId, true, now);
    else if (action === 'reinstate' && app.status === 'suspended') {
      await cancelStale(trx, appId, now);
      await holdTargets(trx, appId, false, now);
    }
    await trx
      .insertInto('audit_events')
      .values({
        id: newId('aud'),
        tenant_id: PLATFORM_TENANT,
        actor: reviewerId,
        action: `app.${action === 'suspend' ? 'suspended' : action === 'delist' ? 'delisted' : 'reinstated'}`,
        details: JSON.stringify({ app_id: appId, reason: why, previous_status: app.status, status: next }),
        created_at: now,
      })
      .execute();
    return changed;
  });
  // Held deliveries are due already: reinstating wakes the workers for them.
  if (action === 'reinstate') runAfterCommit(ctx);
  return presentApp(ctx, updated);
}

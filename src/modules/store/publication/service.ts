import type { AppContext, Trx } from '../../../context.ts';
import { AppError } from '../../../lib/errors.ts';
import { type App, applyReviewedValues, getApp } from '../../apps/service.ts';
import type { Listing } from '../listing/rules.ts';
import { searchDocument } from '../listing/search.ts';
import { parseMediaNames } from '../media/service.ts';
import type { AppSnapshot } from '../submissions/service.ts';
import type { AppSubmissionsTable } from '../tables.ts';

function parsed<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/**
 * Approval (spec 3.1 and 3.2), in the reviewer's transaction: the live app takes the submitted
 * values and is published, and the listing becomes the store listing. Installations keep the
 * scopes they granted.
 */
export async function publishSubmission(
  ctx: AppContext,
  trx: Trx,
  submission: AppSubmissionsTable,
): Promise<void> {
  const snapshot = parsed<AppSnapshot>(submission.app_snapshot);
  const listing = parsed<Listing>(submission.listing);
  await applyReviewedValues(
    ctx,
    trx,
    submission.app_id,
    {
      ...snapshot,
      events_url: submission.events_url,
      status: 'published',
    },
    { submissionId: submission.id, versionId: submission.version_id },
  );
  const now = ctx.clock.now();
  const media = parseMediaNames(submission.media);
  const values = {
    submission_id: submission.id,
    tagline: listing.tagline,
    description_en: listing.description_en,
    description_es: listing.description_es,
    category: listing.category,
    app_url: listing.app_url,
    scope_justifications: JSON.stringify(listing.scope_justifications),
    icon: media.icon,
    screenshots: JSON.stringify(media.screenshots),
    search_en: searchDocument('en', {
      name: snapshot.name,
      tagline: listing.tagline,
      description: listing.description_en,
    }),
    search_es: searchDocument('es', {
      name: snapshot.name,
      tagline: listing.tagline,
      description: listing.description_es.trim() || listing.description_en,
    }),
    updated_at: now,
  };
  await trx
    .insertInto('store_listings')
    .values({ app_id: submission.app_id, ...values, published_at: now })
    .onConflict((oc) => oc.column('app_id').doUpdateSet(values))
    .execute();
  await trx
    .insertInto('app_store_stats')
    .values({ app_id: submission.app_id })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/**
 * POST /v1/developer/apps/{id}/unpublish (spec 3.2): the app becomes private and leaves the store;
 * installations and their tokens keep working. The listing row stays as the last approved one, so
 * the install link still sends people to the app's own start page.
 */
export async function unpublishApp(ctx: AppContext, userId: string, appId: string): Promise<App> {
  const app = await getApp(ctx, userId, appId);
  if (app.status === 'suspended') throw new AppError('app.suspended');
  if (app.status !== 'published') return app;
  await ctx.db
    .updateTable('apps')
    .set({ status: 'private', updated_at: ctx.clock.now() })
    .where('id', '=', app.id)
    .where('status', '=', 'published')
    .execute();
  return getApp(ctx, userId, app.id);
}

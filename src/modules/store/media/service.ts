import { createHash } from 'node:crypto';
import type { AppContext, Trx } from '../../../context.ts';
import { AppError } from '../../../lib/errors.ts';
import { jsonArray } from '../../apps/registry.ts';
import { getApp } from '../../apps/service.ts';
import type { ListingMediaTable } from '../tables.ts';
import {
  type CheckedImage,
  checkImage,
  invalidMedia,
  type MediaKind,
  type MediaNames,
  type MediaRef,
  type MediaSet,
  mediaPath,
  NO_MEDIA,
  SCREENSHOTS_MAX,
} from './images.ts';

function mediaName(kind: MediaKind, image: CheckedImage): string {
  const hash = createHash('sha256').update(image.content).digest('hex').slice(0, 32);
  return `${kind}-${hash}.${image.format === 'png' ? 'png' : 'jpg'}`;
}

async function draftNames(ctx: AppContext, appId: string): Promise<MediaNames> {
  const row = await ctx.db
    .selectFrom('listing_media_drafts')
    .select(['icon', 'screenshots'])
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return row ? { icon: row.icon, screenshots: jsonArray<string>(row.screenshots) } : NO_MEDIA;
}

/** The images' URLs (absolute, on the API's address), in the names' order. */
export function mediaSet(ctx: AppContext, appId: string, names: MediaNames): MediaSet {
  const ref = (name: string): MediaRef => ({ name, url: `${ctx.config.baseUrl}${mediaPath(appId, name)}` });
  return { icon: names.icon ? ref(names.icon) : null, screenshots: names.screenshots.map(ref) };
}

/** The media names a jsonb column holds (a submission's `media`). */
export function parseMediaNames(value: unknown): MediaNames {
  const parsed = (typeof value === 'string' ? JSON.parse(value) : value) as Partial<MediaNames> | null;
  return { icon: parsed?.icon ?? null, screenshots: jsonArray<string>(parsed?.screenshots ?? []) };
}

/** The set the next submission carries (GET /v1/developer/apps/{id}/listing-media). */
export async function draftMedia(ctx: AppContext, userId: string, appId: string): Promise<MediaSet> {
  const app = await getApp(ctx, userId, appId);
  return mediaSet(ctx, app.id, await draftNames(ctx, app.id));
}

/** The draft's names for a submission to carry. */
export async function draftMediaNames(ctx: AppContext, appId: string): Promise<MediaNames> {
  return draftNames(ctx, appId);
}

async function storeImage(
  ctx: AppContext,
  db: Trx | AppContext['db'],
  appId: string,
  kind: MediaKind,
  image: CheckedImage,
): Promise<string> {
  const name = mediaName(kind, image);
  await db
    .insertInto('listing_media')
    .values({
      app_id: appId,
      name,
      kind,
      content_type: image.content_type,
      width: image.width,
      height: image.height,
      byte_size: image.content.length,
      content: image.content,
      created_at: ctx.clock.now(),
    } satisfies ListingMediaTable)
    .onConflict((oc) => oc.columns(['app_id', 'name']).doNothing())
    .execute();
  return name;
}

/** PUT /v1/developer/apps/{id}/listing-media/icon: the next submission's icon. */
export function uploadIcon(
  ctx: AppContext,
  userId: string,
  appId: string,
  bytes: Buffer,
  contentType: string | undefined,
): Promise<MediaSet> {
  return putIcon(ctx, userId, appId, () => checkImage('icon', bytes, contentType));
}

/**
 * The same with an icon that `checkImage` passed elsewhere: the demo's, drawn and checked in a
 * short-lived process of its own (store/demo/media.ts), so that this one never loads libvips.
 */
export function uploadCheckedIcon(
  ctx: AppContext,
  userId: string,
  appId: string,
  image: CheckedImage,
): Promise<MediaSet> {
  return putIcon(ctx, userId, appId, async () => image);
}

async function putIcon(
  ctx: AppContext,
  userId: string,
  appId: string,
  checked: () => Promise<CheckedImage>,
): Promise<MediaSet> {
  const app = await getApp(ctx, userId, appId);
  const image = await checked();
  const name = await storeImage(ctx, ctx.db, app.id, 'icon', image);
  await ctx.db
    .insertInto('listing_media_drafts')
    .values({ app_id: app.id, icon: name, screenshots: '[]', updated_at: ctx.clock.now() })
    .onConflict((oc) => oc.column('app_id').doUpdateSet({ icon: name, updated_at: ctx.clock.now() }))
    .execute();
  return draftMedia(ctx, userId, app.id);
}

/** POST /v1/developer/apps/{id}/listing-media/screenshots: one more screenshot (at most 6). */
export function addScreenshot(
  ctx: AppContext,
  userId: string,
  appId: string,
  bytes: Buffer,
  contentType: string | undefined,
): Promise<MediaSet> {
  return putScreenshot(ctx, userId, appId, () => checkImage('screenshot', bytes, contentType));
}

/** The same with a screenshot that `checkImage` passed elsewhere (the demo's, as `uploadCheckedIcon`). */
export function addCheckedScreenshot(
  ctx: AppContext,
  userId: string,
  appId: string,
  image: CheckedImage,
): Promise<MediaSet> {
  return putScreenshot(ctx, userId, appId, async () => image);
}

async function putScreenshot(
  ctx: AppContext,
  userId: string,
  appId: string,
  checked: () => Promise<CheckedImage>,
): Promise<MediaSet> {
  const app = await getApp(ctx, userId, appId);
  const image = await checked();
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('listing_media_drafts')
      .values({ app_id: app.id, icon: null, screenshots: '[]', updated_at: ctx.clock.now() })
      .onConflict((oc) => oc.column('app_id').doNothing())
      .execute();
    const draft = await trx
      .selectFrom('listing_media_drafts')
      .select('screenshots')
      .where('app_id', '=', app.id)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const names = jsonArray<string>(draft.screenshots);
    const name = mediaName('screenshot', image);
    if (names.includes(name)) return;
    if (names.length >= SCREENSHOTS_MAX) {
      throw invalidMedia(`A listing has at most ${SCREENSHOTS_MAX} screenshots: remove one first`);
    }
    await storeImage(ctx, trx, app.id, 'screenshot', image);
    await trx
      .updateTable('listing_media_drafts')
      .set({ screenshots: JSON.stringify([...names, name]), updated_at: ctx.clock.now() })
      .where('app_id', '=', app.id)
      .execute();
  });
  return draftMedia(ctx, userId, app.id);
}

/** DELETE /v1/developer/apps/{id}/listing-media/screenshots/{name}: out of the next submission. */
export async function removeScreenshot(
  ctx: AppContext,
  userId: string,
  appId: string,
  name: string,
): Promise<MediaSet> {
  const app = await getApp(ctx, userId, appId);
  const names = (await draftNames(ctx, app.id)).screenshots;
  if (!names.includes(name)) throw new AppError('listing_media.not_found');
  await ctx.db
    .updateTable('listing_media_drafts')
    .set({ screenshots: JSON.stringify(names.filter((n) => n !== name)), updated_at: ctx.clock.now() })
    .where('app_id', '=', app.id)
    .execute();
  return draftMedia(ctx, userId, app.id);
}

export interface MediaCheckItem {
  name: string;
  kind: MediaKind;
  width: number;
  height: number;
  bytes: number;
}

/**
 * The submission check `listing_media_valid`: an icon and 1 to 6 screenshots, each stored (each was
 * checked when uploaded). Answers the problems and the images with their sizes.
 */
export async function checkMediaSet(
  ctx: AppContext,
  appId: string,
  names: MediaNames,
): Promise<{ problems: string[]; items: MediaCheckItem[] }> {
  const all = [...(names.icon ? [names.icon] : []), ...names.screenshots];
  const rows =
    all.length === 0
      ? []
      : await ctx.db
          .selectFrom('listing_media')
          .select(['name', 'kind', 'width', 'height', 'byte_size'])
          .where('app_id', '=', appId)
          .where('name', 'in', all)
          .execute();
  const problems: string[] = [];
  if (!names.icon) problems.push('no icon was uploaded');
  if (names.screenshots.length === 0) problems.push('no screenshot was uploaded');
  if (names.screenshots.length > SCREENSHOTS_MAX) problems.push(`more than ${SCREENSHOTS_MAX} screenshots`);
  for (const name of all) {
    if (!rows.some((row) => row.name === name)) problems.push(`${name} is missing`);
  }
  const items = rows.map((row) => ({
    name: row.name,
    kind: row.kind,
    width: row.width,
    height: row.height,
    bytes: row.byte_size,
  }));
  return { problems, items };
}

export interface ServedMedia {
  content: Uint8Array;
  content_type: string;
  /** Published: anyone (and shared caches) may keep it; otherwise only the developer and reviewers. */
  public: boolean;
}

/**
 * GET /v1/store/apps/{id}/media/{name}: an image of the published listing for anyone; an image
 * not (or not yet) published only for its developer and reviewers (the review console). Unknown
 * to anyone else: 404.
 */
export async function serveMedia(
  ctx: AppContext,
  appId: string,
  name: string,
  mayPreview: (developerId: string) => Promise<boolean>,
): Promise<ServedMedia> {
  const row = await ctx.db
    .selectFrom('listing_media')
    .innerJoin('apps', 'apps.id', 'listing_media.app_id')
    .leftJoin('store_listings', 'store_listings.app_id', 'listing_media.app_id')
    .select([
      'listing_media.content',
      'listing_media.content_type',
      'apps.status',
      'apps.developer_id',
      'store_listings.icon',
      'store_listings.screenshots',
    ])
    .where('listing_media.app_id', '=', appId)
    .where('listing_media.name', '=', name)
    .executeTakeFirst();
  if (!row) throw new AppError('listing_media.not_found');
  const published =
    row.status === 'published' &&
    (row.icon === name || jsonArray<string>(row.screenshots ?? []).includes(name));
  // An agent client's app has no developer, and nobody previews it.
  if (!published && (row.developer_id === null || !(await mayPreview(row.developer_id))))
    throw new AppError('listing_media.not_found');
  return { content: row.content, content_type: row.content_type, public: published };
}

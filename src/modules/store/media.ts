import { createHash } from 'node:crypto';
import type { Metadata } from 'sharp';
import type { AppContext, Trx } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { loadSharp } from '../../lib/sharp.ts';
import { jsonArray } from '../apps/registry.ts';
import { getApp } from '../apps/service.ts';
import type { ListingMediaTable } from './tables.ts';

export type MediaKind = 'icon' | 'screenshot';

/** CONTRACT.md "Store trust": what the listing takes. */
export const ICON_MIN = 256;
export const ICON_MAX = 1024;
export const ICON_MAX_BYTES = 1024 * 1024;
export const SCREENSHOT_MIN_WIDTH = 1280;
export const SCREENSHOT_MAX_WIDTH = 2560;
export const SCREENSHOT_MAX_BYTES = 2 * 1024 * 1024;
export const SCREENSHOTS_MAX = 6;
/** What the upload routes read before refusing with 413: above every limit, so 422 names the rule. */
export const UPLOAD_BODY_LIMIT = 8 * 1024 * 1024;

const FORMATS = { png: 'image/png', jpeg: 'image/jpeg' } as const;
type Format = keyof typeof FORMATS;

/** A listing image as the API shows it. */
export interface MediaRef {
  name: string;
  url: string;
}

export interface MediaSet {
  icon: MediaRef | null;
  screenshots: MediaRef[];
}

/** The names a submission or listing stores; the dimensions are looked up when shown. */
export interface MediaNames {
  icon: string | null;
  screenshots: string[];
}

export const NO_MEDIA: MediaNames = { icon: null, screenshots: [] };

function refused(detail: string): AppError {
  return new AppError('listing_media.invalid', detail);
}

/** The path the store serves an image at; the name holds its content hash, so it never changes. */
export function mediaPath(appId: string, name: string): string {
  return `/v1/store/apps/${encodeURIComponent(appId)}/media/${encodeURIComponent(name)}`;
}

function dimensionProblem(kind: MediaKind, width: number, height: number): string | null {
  if (kind === 'icon') {
    if (width !== height) return `An icon must be square; this one is ${width}×${height} px`;
    if (width < ICON_MIN || width > ICON_MAX)
      return `An icon is ${ICON_MIN} to ${ICON_MAX} px wide; this one is ${width} px`;
    return null;
  }
  // 16:9 within one pixel of height, for sizes such as 1366×768.
  if (Math.abs(width * 9 - height * 16) > 16)
    return `A screenshot must be 16:9 (such as 1920×1080); this one is ${width}×${height} px`;
  if (width < SCREENSHOT_MIN_WIDTH || width > SCREENSHOT_MAX_WIDTH)
    return `A screenshot is ${SCREENSHOT_MIN_WIDTH} to ${SCREENSHOT_MAX_WIDTH} px wide; this one is ${width} px`;
  return null;
}

/** The declared type, when the client named one of the two: it must agree with the bytes. */
function declaredFormat(contentType: string | undefined): Format | 'other' | null {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (!type || type === 'application/octet-stream') return null;
  if (type === 'image/png') return 'png';
  if (type === 'image/jpeg' || type === 'image/jpg') return 'jpeg';
  return 'other';
}

export interface CheckedImage {
  content: Buffer;
  content_type: string;
  format: Format;
  width: number;
  height: number;
}

/**
 * Reads the type and size from the bytes (libvips through sharp, never the name or the header),
 * checks them against the listing's rules, and re-encodes the pixels: the stored image carries no
 * EXIF, XMP, ICC comments or trailing data of the upload. The header is read first, so a
 * decompression bomb (a small file that claims huge dimensions) is refused before any pixel is
 * decoded; `limitInputPixels` bounds the decoder as well.
 */
export async function checkImage(
  kind: MediaKind,
  bytes: Buffer,
  contentType: string | undefined,
): Promise<CheckedImage> {
  const maxBytes = kind === 'icon' ? ICON_MAX_BYTES : SCREENSHOT_MAX_BYTES;
  if (bytes.length === 0) throw refused('The body is empty: send the image bytes');
  if (bytes.length > maxBytes) {
    throw refused(
      `A${kind === 'icon' ? 'n icon' : ' screenshot'} is ${maxBytes / 1024 / 1024} MB at most; this one is ${(bytes.length / 1024 / 1024).toFixed(1)} MB`,
    );
  }
  const maxPixels = kind === 'icon' ? ICON_MAX * ICON_MAX : SCREENSHOT_MAX_WIDTH * 1440;
  const sharp = await loadSharp();
  let metadata: Metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'warning' }).metadata();
  } catch {
    throw refused('The body is not an image: send a PNG or a JPEG');
  }
  const format: string | undefined = metadata.format;
  if (format !== 'png' && format !== 'jpeg') {
    throw refused(`The image is ${format ?? 'of an unknown type'}: send a PNG or a JPEG`);
  }
  const declared = declaredFormat(contentType);
  if (declared !== null && declared !== format) {
    throw refused(
      `The bytes are a ${format.toUpperCase()} but the body was sent as ${String(contentType)}: send the type the file is`,
    );
  }
  // EXIF orientation 5 to 8 turns the picture a quarter: people see it with the sides swapped.
  const turned = (metadata.orientation ?? 1) >= 5;
  const width = turned ? metadata.height : metadata.width;
  const height = turned ? metadata.width : metadata.height;
  const problem = dimensionProblem(kind, width, height);
  if (problem) throw refused(problem);
  let content: Buffer;
  try {
    const image = sharp(bytes, { limitInputPixels: maxPixels, failOn: 'warning' }).rotate();
    content = await (format === 'png'
      ? image.png({ compressionLevel: 9, adaptiveFiltering: true })
      : image.jpeg({ quality: 88, mozjpeg: true })
    ).toBuffer();
  } catch {
    throw refused('The image is damaged or truncated: it could not be decoded');
  }
  if (content.length > maxBytes) {
    throw refused(`Re-encoded without metadata the image is still over ${maxBytes / 1024 / 1024} MB`);
  }
  return { content, content_type: FORMATS[format], format, width, height };
}

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
export async function uploadIcon(
  ctx: AppContext,
  userId: string,
  appId: string,
  bytes: Buffer,
  contentType: string | undefined,
): Promise<MediaSet> {
  const app = await getApp(ctx, userId, appId);
  const image = await checkImage('icon', bytes, contentType);
  const name = await storeImage(ctx, ctx.db, app.id, 'icon', image);
  await ctx.db
    .insertInto('listing_media_drafts')
    .values({ app_id: app.id, icon: name, screenshots: '[]', updated_at: ctx.clock.now() })
    .onConflict((oc) => oc.column('app_id').doUpdateSet({ icon: name, updated_at: ctx.clock.now() }))
    .execute();
  return draftMedia(ctx, userId, app.id);
}

/** POST /v1/developer/apps/{id}/listing-media/screenshots: one more screenshot (at most 6). */
export async function addScreenshot(
  ctx: AppContext,
  userId: string,
  appId: string,
  bytes: Buffer,
  contentType: string | undefined,
): Promise<MediaSet> {
  const app = await getApp(ctx, userId, appId);
  const image = await checkImage('screenshot', bytes, contentType);
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
      throw refused(`A listing has at most ${SCREENSHOTS_MAX} screenshots: remove one first`);
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

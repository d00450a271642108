/** The listing's image rules (CONTRACT.md "Store trust"): sizes, formats, and the check every upload passes. */
import type { Metadata } from 'sharp';
import { AppError } from '../../../lib/errors.ts';
import { loadSharp } from '../../../lib/sharp.ts';

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

export function invalidMedia(detail: string): AppError {
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
  if (bytes.length === 0) throw invalidMedia('The body is empty: send the image bytes');
  if (bytes.length > maxBytes) {
    throw invalidMedia(
      `A${kind === 'icon' ? 'n icon' : ' screenshot'} is ${maxBytes / 1024 / 1024} MB at most; this one is ${(bytes.length / 1024 / 1024).toFixed(1)} MB`,
    );
  }
  const maxPixels = kind === 'icon' ? ICON_MAX * ICON_MAX : SCREENSHOT_MAX_WIDTH * 1440;
  const sharp = await loadSharp();
  let metadata: Metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'warning' }).metadata();
  } catch {
    throw invalidMedia('The body is not an image: send a PNG or a JPEG');
  }
  const format: string | undefined = metadata.format;
  if (format !== 'png' && format !== 'jpeg') {
    throw invalidMedia(`The image is ${format ?? 'of an unknown type'}: send a PNG or a JPEG`);
  }
  const declared = declaredFormat(contentType);
  if (declared !== null && declared !== format) {
    throw invalidMedia(
      `The bytes are a ${format.toUpperCase()} but the body was sent as ${String(contentType)}: send the type the file is`,
    );
  }
  // EXIF orientation 5 to 8 turns the picture a quarter: people see it with the sides swapped.
  const turned = (metadata.orientation ?? 1) >= 5;
  const width = turned ? metadata.height : metadata.width;
  const height = turned ? metadata.width : metadata.height;
  const problem = dimensionProblem(kind, width, height);
  if (problem) throw invalidMedia(problem);
  let content: Buffer;
  try {
    const image = sharp(bytes, { limitInputPixels: maxPixels, failOn: 'warning' }).rotate();
    content = await (format === 'png'
      ? image.png({ compressionLevel: 9, adaptiveFiltering: true })
      : image.jpeg({ quality: 88, mozjpeg: true })
    ).toBuffer();
  } catch {
    throw invalidMedia('The image is damaged or truncated: it could not be decoded');
  }
  if (content.length > maxBytes) {
    throw invalidMedia(`Re-encoded without metadata the image is still over ${maxBytes / 1024 / 1024} MB`);
  }
  return { content, content_type: FORMATS[format], format, width, height };
}

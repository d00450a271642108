import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { AppError } from '../../lib/errors.ts';
import { loadSharp } from '../../lib/sharp.ts';
import { textColorOn } from './contrast.ts';

/** The default accent: the stylesheet's own (white text on it passes AA). */
export const DEFAULT_ACCENT = '#1f5eff';
export const LOGO_MAX_BYTES = 1024 * 1024;
/** Longest side of the stored logo: it is shown small, on phones and in e-mail. */
const LOGO_MAX_SIDE = 512;

export interface Branding {
  display_name: string | null;
  accent_color: string | null;
  support_url: string | null;
  /** The stored logo's name (its content hash), or null. */
  logo: string | null;
}

export interface BrandingInput {
  display_name?: string | null;
  accent_color?: string | null;
  support_url?: string | null;
}

export const NO_BRANDING: Branding = {
  display_name: null,
  accent_color: null,
  support_url: null,
  logo: null,
};

export async function brandingOf(db: Db, tenantId: string): Promise<Branding> {
  const row = await db
    .selectFrom('recipient_settings')
    .select(['display_name', 'accent_color', 'support_url', 'logo_name'])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) return NO_BRANDING;
  return {
    display_name: row.display_name,
    accent_color: row.accent_color,
    support_url: row.support_url,
    logo: row.logo_name,
  };
}

/** What the page and the e-mail draw with: a name, an accent and the text colour that reads on it. */
export interface Look {
  name: string;
  accent: string;
  onAccent: string;
  supportUrl: string | null;
  logo: string | null;
}

export function lookOf(branding: Branding, companyName: string): Look {
  const accent = branding.accent_color ?? DEFAULT_ACCENT;
  return {
    name: branding.display_name ?? companyName,
    accent,
    onAccent: textColorOn(accent) ?? '#ffffff',
    supportUrl: branding.support_url,
    logo: branding.logo,
  };
}

/** The look of one company's pages and e-mail: its branding over its name. */
export async function lookOfCompany(db: Db, tenantId: string): Promise<Look> {
  const [branding, company] = await Promise.all([
    brandingOf(db, tenantId),
    db.selectFrom('companies').select('name').where('id', '=', tenantId).executeTakeFirst(),
  ]);
  return lookOf(branding, company?.name ?? '');
}

/** Refuses an accent no text reads on (WCAG AA, 4.5 to 1, white or dark text). */
export function checkAccent(color: string | null | undefined): void {
  if (!color) return;
  if (textColorOn(color.toLowerCase()) === null) {
    throw new AppError('branding.accent_color_contrast', undefined, {
      errors: [
        {
          path: '/branding/accent_color',
          message: `${color}: neither white nor dark text on it reaches 4.5 to 1 (WCAG AA)`,
        },
      ],
    });
  }
}

/** The settings row's branding columns for a PATCH (only the fields given). */
export function brandingColumns(input: BrandingInput) {
  checkAccent(input.accent_color);
  return {
    ...(input.display_name !== undefined ? { display_name: input.display_name?.trim() || null } : {}),
    ...(input.accent_color !== undefined ? { accent_color: input.accent_color?.toLowerCase() ?? null } : {}),
    ...(input.support_url !== undefined ? { support_url: input.support_url } : {}),
  };
}

const LOGO_TYPES = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' } as const;

function invalidLogo(detail: string): AppError {
  return new AppError('branding.logo_invalid', detail);
}

/**
 * Reads the type from the bytes (sharp, as the store's listing media), refuses anything but PNG,
 * JPEG or WebP of at most 1 MB, and re-encodes the pixels (no metadata of the upload survives),
 * scaled down to 512 px at most.
 */
export async function checkLogo(bytes: Buffer): Promise<{ content: Buffer; contentType: string }> {
  if (bytes.length === 0) throw invalidLogo('The body is empty: send the image bytes');
  if (bytes.length > LOGO_MAX_BYTES) throw invalidLogo('A logo is 1 MB at most');
  const sharp = await loadSharp();
  let format: string | undefined;
  try {
    format = (await sharp(bytes, { limitInputPixels: 4096 * 4096, failOn: 'warning' }).metadata()).format;
  } catch {
    throw invalidLogo('The body is not an image: send a PNG, a JPEG or a WebP');
  }
  if (format !== 'png' && format !== 'jpeg' && format !== 'webp')
    throw invalidLogo(`The image is ${format ?? 'of an unknown type'}: send a PNG, a JPEG or a WebP`);
  try {
    const image = sharp(bytes, { limitInputPixels: 4096 * 4096, failOn: 'warning' })
      .rotate()
      .resize({ width: LOGO_MAX_SIDE, height: LOGO_MAX_SIDE, fit: 'inside', withoutEnlargement: true });
    const content = await (format === 'png'
      ? image.png({ compressionLevel: 9 })
      : format === 'jpeg'
        ? image.jpeg({ quality: 88, mozjpeg: true })
        : image.webp({ quality: 88 })
    ).toBuffer();
    return { content, contentType: LOGO_TYPES[format] };
  } catch {
    throw invalidLogo('The image is damaged or truncated: it could not be decoded');
  }
}

/** Stores a checked logo as the company's, named by its content hash. */
export async function saveLogo(ctx: AppContext, tenantId: string, bytes: Buffer): Promise<string> {
  const logo = await checkLogo(bytes);
  const name = createHash('sha256').update(logo.content).digest('hex').slice(0, 32);
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('company_logos').where('tenant_id', '=', tenantId).execute();
    await trx
      .insertInto('company_logos')
      .values({
        tenant_id: tenantId,
        name,
        content_type: logo.contentType,
        content: logo.content,
        created_at: now,
      })
      .execute();
    await trx
      .insertInto('recipient_settings')
      .values({ tenant_id: tenantId, logo_name: name, updated_at: now })
      .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ logo_name: name, updated_at: now }))
      .execute();
  });
  return name;
}

export async function logoOf(
  db: Db,
  tenantId: string,
): Promise<{ name: string; contentType: string; content: Buffer } | null> {
  const row = await db
    .selectFrom('company_logos')
    .select(['name', 'content_type', 'content'])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row ? { name: row.name, contentType: row.content_type, content: row.content } : null;
}

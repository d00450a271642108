/** WCAG 2.2 contrast (1.4.3, level AA): 4.5 to 1 for text of ordinary size. */
export const AA_CONTRAST = 4.5;

/** The dark text the page and the e-mail put on a light accent (the stylesheet's --fg). */
export const DARK_TEXT = '#1b1f24';
export const WHITE_TEXT = '#ffffff';

function channel(value: number): number {
  const c = value / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

/** Relative luminance of `#rrggbb` (WCAG 2.2, "relative luminance"). */
export function luminance(hex: string): number {
  const n = Number.parseInt(hex.slice(1), 16);
  return 0.2126 * channel((n >> 16) & 255) + 0.7152 * channel((n >> 8) & 255) + 0.0722 * channel(n & 255);
}

export function contrastRatio(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** The text colour to put on an accent: white where it reads, else dark; null when neither does. */
export function textColorOn(accent: string): string | null {
  if (contrastRatio(accent, WHITE_TEXT) >= AA_CONTRAST) return WHITE_TEXT;
  if (contrastRatio(accent, DARK_TEXT) >= AA_CONTRAST) return DARK_TEXT;
  return null;
}

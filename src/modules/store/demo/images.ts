import { loadSharp } from '../../../lib/sharp.ts';

/**
 * The demo's listing images, drawn at seed time from SVG made here (no image taken from
 * elsewhere): an icon with the app's colours and initial, and screenshots of a made-up screen of
 * the app. They go through the same upload checks as a developer's, in a short-lived child
 * process (media.ts, draw-child.ts): the server does not load libvips for them.
 */
export interface DemoLook {
  name: string;
  colour: string;
  accent: string;
  /** What the made-up screen lists. */
  rows: string[];
}

const escapeXml = (text: string) =>
  text.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c] ?? c,
  );

async function pngOf(svg: string): Promise<Buffer> {
  const sharp = await loadSharp();
  return sharp(Buffer.from(svg)).png().toBuffer();
}

export function demoIcon(look: DemoLook): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">
  <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
    <stop offset="0" stop-color="${look.colour}"/><stop offset="1" stop-color="${look.accent}"/></linearGradient></defs>
  <rect width="512" height="512" rx="112" fill="url(#g)"/>
  <path d="M136 196 L256 136 L376 196 L376 328 L256 388 L136 328 Z" fill="none" stroke="#fff" stroke-width="28" stroke-linejoin="round"/>
  <path d="M136 196 L256 256 L376 196 M256 256 L256 388" fill="none" stroke="#fff" stroke-width="28" stroke-linejoin="round"/>
</svg>`;
  return pngOf(svg);
}

export function demoScreenshot(look: DemoLook, variant: number): Promise<Buffer> {
  const rows = look.rows
    .map((row, i) => {
      const y = 250 + i * 90;
      const done = (i + variant) % 3 !== 0;
      return `<rect x="120" y="${y}" width="1040" height="70" rx="10" fill="#ffffff" stroke="#dde3ec"/>
  <circle cx="165" cy="${y + 35}" r="16" fill="${done ? '#38a169' : look.accent}"/>
  <text x="205" y="${y + 45}" font-family="sans-serif" font-size="28" fill="#1a202c">${escapeXml(row)}</text>
  <rect x="${variant === 0 ? 920 : 860}" y="${y + 18}" width="${variant === 0 ? 200 : 260}" height="34" rx="17" fill="${done ? '#c6f6d5' : '#fefcbf'}"/>`;
    })
    .join('\n');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="720" viewBox="0 0 1280 720">
  <rect width="1280" height="720" fill="#f4f6fa"/>
  <rect width="1280" height="96" fill="${look.colour}"/>
  <text x="120" y="62" font-family="sans-serif" font-size="38" font-weight="bold" fill="#ffffff">${escapeXml(look.name)}</text>
  <rect x="120" y="140" width="${variant === 0 ? 420 : 560}" height="56" rx="8" fill="${look.accent}" opacity="0.85"/>
  ${rows}
</svg>`;
  return pngOf(svg);
}

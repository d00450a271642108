import { html, type SafeHtml } from '../../../web/html.ts';
import type { Lang } from '../listing/categories.ts';
import { TRUST_WORDS } from '../listing/words.ts';
import type { MediaRef } from './images.ts';

/** Pages load images from the same origin (CSP img-src 'self'): the path of the API's URL. */
export function imagePath(url: string): string {
  return new URL(url).pathname;
}

export function icon(url: string | null, name: string, size: 'small' | 'large'): SafeHtml | string {
  if (!url)
    return html`<span class="app-icon ${size} placeholder" aria-hidden="true">${name.slice(0, 1)}</span>`;
  return html`<img class="app-icon ${size}" src="${imagePath(url)}" alt="" width="${size === 'small' ? 48 : 96}" height="${size === 'small' ? 48 : 96}">`;
}

export function screenshots(shots: MediaRef[], appName: string, lang: Lang): SafeHtml | string {
  if (shots.length === 0) return '';
  return html`<section class="card"><h2>${TRUST_WORDS[lang].screenshots}</h2>
<ul class="plain screenshots">${shots.map(
    (shot, i) =>
      html`<li><a href="${imagePath(shot.url)}"><img src="${imagePath(shot.url)}" alt="${appName}: ${TRUST_WORDS[lang].screenshots} ${i + 1}" loading="lazy"></a></li>`,
  )}</ul></section>`;
}

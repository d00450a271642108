import { html, type SafeHtml } from '../../../web/html.ts';
import { csrfField } from '../../../web/layout.ts';
import { confirmLink } from '../../../web/pages/confirm.ts';
import { portalPage } from '../../apps/portal-views.ts';
import type { Lang } from '../listing/categories.ts';
import { TRUST_WORDS } from '../listing/words.ts';
import {
  ICON_MAX,
  ICON_MAX_BYTES,
  ICON_MIN,
  type MediaRef,
  type MediaSet,
  SCREENSHOT_MAX_BYTES,
  SCREENSHOT_MAX_WIDTH,
  SCREENSHOT_MIN_WIDTH,
  SCREENSHOTS_MAX,
} from './images.ts';

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

export interface MediaPage {
  csrf: string;
  flash: { kind: 'ok' | 'error'; message: string } | null;
}

const imageField = (label: string) =>
  html`<label>${label} <input type="file" name="image" accept="image/png,image/jpeg" required></label>`;

/**
 * The developer portal's listing images: what the next submission carries, an upload form for the
 * icon and for a screenshot (multipart, the same checks as the API's raw uploads) and a remove
 * button under each screenshot.
 */
export function mediaManager(page: MediaPage, app: { id: string; name: string }, set: MediaSet): SafeHtml {
  const action = `/developer/apps/${app.id}/listing-media`;
  return portalPage(
    page,
    `Icon and screenshots · ${app.name}`,
    html`<p><a href="/developer/apps/${app.id}/submissions">Back to App Store submissions</a></p>
<h1>Icon and screenshots of ${app.name}</h1>
<p class="muted">Your next submission carries these images; the store shows them once a reviewer approves it. PNG or JPEG; the type is read from the file, and metadata (EXIF and the like) is stripped.</p>
<section class="card"><h2>Icon</h2>
${set.icon ? html`<p><img class="app-icon large" src="${imagePath(set.icon.url)}" alt="The icon" width="96" height="96"></p>` : html`<p class="muted">No icon yet.</p>`}
<form class="stack" method="post" enctype="multipart/form-data" action="${action}/icon">${csrfField(page.csrf)}
${imageField(`${set.icon ? 'Replace the icon' : 'Icon'}: square, ${ICON_MIN} to ${ICON_MAX} px, ${ICON_MAX_BYTES / 1024 / 1024} MB at most`)}
<p><button type="submit">Upload the icon</button></p></form></section>
<section class="card"><h2>Screenshots <span class="muted">(${set.screenshots.length} of ${SCREENSHOTS_MAX})</span></h2>
${
  set.screenshots.length > 0
    ? html`<ul class="plain screenshots">${set.screenshots.map(
        (shot, i) => html`<li><img src="${imagePath(shot.url)}" alt="Screenshot ${i + 1}" loading="lazy">
${confirmLink(`${action}/screenshots/${encodeURIComponent(shot.name)}/delete`, `Remove screenshot ${i + 1}`, 'secondary')}</li>`,
      )}</ul>`
    : html`<p class="muted">No screenshots yet.</p>`
}
${
  set.screenshots.length < SCREENSHOTS_MAX
    ? html`<form class="stack" method="post" enctype="multipart/form-data" action="${action}/screenshots">${csrfField(page.csrf)}
${imageField(`Add a screenshot: 16:9, ${SCREENSHOT_MIN_WIDTH} to ${SCREENSHOT_MAX_WIDTH} px wide, ${SCREENSHOT_MAX_BYTES / 1024 / 1024} MB at most`)}
<p><button type="submit">Add the screenshot</button></p></form>`
    : html`<p class="muted">Remove one to add another.</p>`
}</section>`,
  );
}

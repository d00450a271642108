import { html, type SafeHtml } from '../../../web/html.ts';
import type { Lang } from '../listing/categories.ts';
import { TRUST_WORDS } from '../listing/words.ts';
import { stars } from '../ratings/views.ts';
import type { StoreApp } from './queries.ts';

export function installs(app: StoreApp, lang: Lang): SafeHtml {
  return html`<span class="installs">${app.installs} ${TRUST_WORDS[lang].installs}</span>`;
}

/** The distribution as bars: how many reviews gave each number of stars. */
export function ratingSummary(app: StoreApp, lang: Lang): SafeHtml {
  const most = Math.max(1, ...Object.values(app.rating_distribution));
  const rows = (['5', '4', '3', '2', '1'] as const).map((n) => {
    const count = app.rating_distribution[n];
    return html`<tr><th scope="row">${n} ★</th><td><meter min="0" max="${most}" value="${count}">${count}</meter></td><td>${count}</td></tr>`;
  });
  return html`<div class="rating-summary"><p class="big">${stars(app.rating_avg, lang, app.review_count)}</p>
<table class="distribution"><tbody>${rows}</tbody></table></div>`;
}

import { html, type SafeHtml } from '../../../web/html.ts';
import { csrfField } from '../../../web/layout.ts';
import type { StoreApp } from '../catalogue/queries.ts';
import type { Lang } from '../listing/categories.ts';
import type { MediaRef, MediaSet } from '../media/service.ts';
import { REPLY_BODY_MAX, REVIEW_BODY_MAX, type Review } from './reviews.ts';

/** Pages load images from the same origin (CSP img-src 'self'): the path of the API's URL. */
export function imagePath(url: string): string {
  return new URL(url).pathname;
}

const when = (iso: string) => `${iso.slice(0, 10)}`;

export const TRUST_WORDS = {
  en: {
    reviews: 'Reviews',
    noReviews: 'No reviews yet.',
    reply: 'Reply from the developer',
    write: 'Review this app',
    rating: 'Rating',
    text: 'Your review',
    send: 'Publish the review',
    installs: 'installs',
    screenshots: 'Screenshots',
    hidden: 'Hidden by a reviewer',
    sort: 'Sort',
    sorts: { relevance: 'Relevance', rating: 'Rating', installs: 'Installs', newest: 'Newest' },
    of: 'of 5',
    yours: 'Your company’s review',
    remove: 'Delete the review',
  },
  es: {
    reviews: 'Reseñas',
    noReviews: 'Todavía no hay reseñas.',
    reply: 'Respuesta del desarrollador',
    write: 'Reseña esta app',
    rating: 'Valoración',
    text: 'Tu reseña',
    send: 'Publicar la reseña',
    installs: 'instalaciones',
    screenshots: 'Capturas',
    hidden: 'Ocultada por un revisor',
    sort: 'Ordenar',
    sorts: { relevance: 'Relevancia', rating: 'Valoración', installs: 'Instalaciones', newest: 'Más nuevas' },
    of: 'de 5',
    yours: 'La reseña de tu empresa',
    remove: 'Borrar la reseña',
  },
} as const;

/** Five stars, filled to the rounded rating; read out as "4.5 of 5". */
export function stars(rating: number | null, lang: Lang, count?: number): SafeHtml {
  const filled = rating === null ? 0 : Math.round(rating);
  const label =
    rating === null ? TRUST_WORDS[lang].noReviews : `${rating.toFixed(1)} ${TRUST_WORDS[lang].of}`;
  return html`<span class="stars" role="img" aria-label="${label}"><span aria-hidden="true">${'★'.repeat(filled)}${'☆'.repeat(5 - filled)}</span></span>${
    rating === null ? '' : html` <span class="rating-value">${rating.toFixed(1)}</span>`
  }${count === undefined ? '' : html` <span class="muted">(${count})</span>`}`;
}

export function icon(url: string | null, name: string, size: 'small' | 'large'): SafeHtml | string {
  if (!url)
    return html`<span class="app-icon ${size} placeholder" aria-hidden="true">${name.slice(0, 1)}</span>`;
  return html`<img class="app-icon ${size}" src="${imagePath(url)}" alt="" width="${size === 'small' ? 48 : 96}" height="${size === 'small' ? 48 : 96}">`;
}

export function installs(app: StoreApp, lang: Lang): SafeHtml {
  return html`<span class="installs">${app.installs} ${TRUST_WORDS[lang].installs}</span>`;
}

export function screenshots(shots: MediaRef[], appName: string, lang: Lang): SafeHtml | string {
  if (shots.length === 0) return '';
  return html`<section class="card"><h2>${TRUST_WORDS[lang].screenshots}</h2>
<ul class="plain screenshots">${shots.map(
    (shot, i) =>
      html`<li><a href="${imagePath(shot.url)}"><img src="${imagePath(shot.url)}" alt="${appName}: ${TRUST_WORDS[lang].screenshots} ${i + 1}" loading="lazy"></a></li>`,
  )}</ul></section>`;
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

export interface ReviewListOptions {
  lang: Lang;
  /** The developer portal: a reply form under each review. */
  replyForm?: { csrf: string; appId: string };
  /** The store: a delete button on the company's own review. */
  ownActions?: { csrf: string; appId: string; tenantId: string };
}

function replyBlock(review: Review, lang: Lang): SafeHtml | string {
  if (!review.reply) return '';
  return html`<blockquote class="reply"><p class="muted">${TRUST_WORDS[lang].reply} · ${when(review.reply.updated_at)}</p>
<p class="pre">${review.reply.body}</p></blockquote>`;
}

function replyForm(review: Review, options: NonNullable<ReviewListOptions['replyForm']>): SafeHtml {
  return html`<form class="stack reply-form" method="post" action="/developer/apps/${options.appId}/reviews/${review.id}/reply">${csrfField(options.csrf)}
<label>${review.reply ? 'Edit your reply' : 'Reply'} <textarea name="body" rows="3" maxlength="${REPLY_BODY_MAX}" required>${review.reply?.body ?? ''}</textarea></label>
<p><button type="submit" class="secondary">${review.reply ? 'Save the reply' : 'Publish the reply'}</button></p></form>`;
}

export function reviewList(reviews: Review[], options: ReviewListOptions): SafeHtml {
  const { lang } = options;
  if (reviews.length === 0) return html`<p class="muted">${TRUST_WORDS[lang].noReviews}</p>`;
  return html`<ul class="plain reviews">${reviews.map(
    (review) => html`<li class="review${review.hidden ? ' hidden-review' : ''}" id="review-${review.id}">
<p>${stars(review.rating, lang)} <strong>${review.company_name}</strong> <span class="muted">· ${when(review.created_at)}${review.updated_at !== review.created_at ? ` (edited ${when(review.updated_at)})` : ''}</span></p>
${review.hidden ? html`<p class="flash error" role="note">${TRUST_WORDS[lang].hidden}: ${review.hidden_reason ?? ''}</p>` : ''}
<p class="pre review-body">${review.body}</p>
${replyBlock(review, lang)}
${options.replyForm ? replyForm(review, options.replyForm) : ''}
${
  options.ownActions && review.mine
    ? html`<form class="inline" method="post" action="/dashboard/store/${options.ownActions.appId}/reviews/${review.id}/delete">${csrfField(options.ownActions.csrf)}<button type="submit" class="secondary">${TRUST_WORDS[lang].remove}</button></form>`
    : ''
}
</li>`,
  )}</ul>`;
}

export function reviewForm(csrf: string, appId: string, companyName: string, lang: Lang): SafeHtml {
  const w = TRUST_WORDS[lang];
  return html`<form class="stack card review-form" method="post" action="/dashboard/store/${appId}/reviews">${csrfField(csrf)}
<h3>${w.write} <span class="muted">(${companyName})</span></h3>
<fieldset class="row"><legend>${w.rating}</legend>${[5, 4, 3, 2, 1].map(
    (n) =>
      html`<label class="check"><input type="radio" name="rating" value="${n}" required${n === 5 ? html` checked` : ''}> ${n} ★</label>`,
  )}</fieldset>
<label>${w.text} <textarea name="body" rows="4" maxlength="${REVIEW_BODY_MAX}" required></textarea></label>
<p><button type="submit">${w.send}</button></p></form>`;
}

/** The review console: the submission's images beside the store's. */
export function mediaComparison(submitted: MediaSet, live: MediaSet): SafeHtml {
  const column = (set: MediaSet, label: string) => html`<div><h3>${label}</h3>
${set.icon ? html`<p><img class="app-icon large" src="${imagePath(set.icon.url)}" alt="Icon" width="96" height="96"></p>` : html`<p class="muted">No icon.</p>`}
${
  set.screenshots.length > 0
    ? html`<ul class="plain screenshots">${set.screenshots.map(
        (s, i) =>
          html`<li><a href="${imagePath(s.url)}"><img src="${imagePath(s.url)}" alt="Screenshot ${i + 1}" loading="lazy"></a></li>`,
      )}</ul>`
    : html`<p class="muted">No screenshots.</p>`
}</div>`;
  const same =
    submitted.icon?.name === live.icon?.name &&
    submitted.screenshots.map((s) => s.name).join() === live.screenshots.map((s) => s.name).join();
  return html`<section class="card"><h2>Images ${same ? html`<span class="muted">(unchanged)</span>` : html`<span class="badge">changes</span>`}</h2>
<div class="media-compare">${column(submitted, 'Submitted')}${column(live, 'In the store now')}</div></section>`;
}

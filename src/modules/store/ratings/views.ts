import { html, type SafeHtml } from '../../../web/html.ts';
import { csrfField } from '../../../web/layout.ts';
import { confirmLink } from '../../../web/pages/confirm.ts';
import type { Lang } from '../listing/categories.ts';
import { TRUST_WORDS } from '../listing/words.ts';
import type { Review } from './rows.ts';
import { REPLY_BODY_MAX, REVIEW_BODY_MAX } from './rules.ts';

const when = (iso: string) => `${iso.slice(0, 10)}`;

/** Five stars, filled to the rounded rating; read out as "4.5 of 5". */
export function stars(rating: number | null, lang: Lang, count?: number): SafeHtml {
  const filled = rating === null ? 0 : Math.round(rating);
  const label =
    rating === null ? TRUST_WORDS[lang].noReviews : `${rating.toFixed(1)} ${TRUST_WORDS[lang].of}`;
  return html`<span class="stars" role="img" aria-label="${label}"><span aria-hidden="true">${'★'.repeat(filled)}${'☆'.repeat(5 - filled)}</span></span>${
    rating === null ? '' : html` <span class="rating-value">${rating.toFixed(1)}</span>`
  }${count === undefined ? '' : html` <span class="muted">(${count})</span>`}`;
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
${options.ownActions && review.mine ? ownReviewActions(review, options.ownActions, lang) : ''}
</li>`,
  )}</ul>`;
}

/** One to five stars as radio buttons, `checked` chosen. */
function ratingChoices(lang: Lang, checked: number): SafeHtml {
  return html`<fieldset class="row"><legend>${TRUST_WORDS[lang].rating}</legend>${[5, 4, 3, 2, 1].map(
    (n) =>
      html`<label class="check"><input type="radio" name="rating" value="${n}" required${n === checked ? html` checked` : ''}> ${n} ★</label>`,
  )}</fieldset>`;
}

/** The company's own review: edit it in place (folded) or delete it. */
function ownReviewActions(
  review: Review,
  options: NonNullable<ReviewListOptions['ownActions']>,
  lang: Lang,
): SafeHtml {
  const w = TRUST_WORDS[lang];
  const action = `/dashboard/store/${options.appId}/reviews/${review.id}`;
  return html`<details class="edit-review"><summary>${w.edit}</summary>
<form class="stack" method="post" action="${action}">${csrfField(options.csrf)}
${ratingChoices(lang, review.rating)}
<label>${w.text} <textarea name="body" rows="4" maxlength="${REVIEW_BODY_MAX}" required>${review.body}</textarea></label>
<p><button type="submit">${w.save}</button></p></form></details>
${confirmLink(`${action}/delete?lang=${lang}`, w.remove, 'secondary')}`;
}

export function reviewForm(csrf: string, appId: string, companyName: string, lang: Lang): SafeHtml {
  const w = TRUST_WORDS[lang];
  return html`<form class="stack card review-form" method="post" action="/dashboard/store/${appId}/reviews">${csrfField(csrf)}
<h3>${w.write} <span class="muted">(${companyName})</span></h3>
${ratingChoices(lang, 5)}
<label>${w.text} <textarea name="body" rows="4" maxlength="${REVIEW_BODY_MAX}" required></textarea></label>
<p><button type="submit">${w.send}</button></p></form>`;
}

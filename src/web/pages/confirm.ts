import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';

export interface Confirmation {
  /** The question, naming the thing: "Delete the endpoint https://…?" */
  question: string;
  /** What will be lost, or what changes, one item a line. */
  lost: Array<string | SafeHtml>;
  /** Where the confirming POST goes (the action itself). */
  action: string;
  /** The button's words: "Delete endpoint". */
  confirm: string;
  /** Where "Cancel" goes back to. */
  back: string;
  /** Fields the confirming form carries on (e.g. a privacy request's contact). */
  fields?: Record<string, string>;
  /** Anything else to show between the list and the buttons (a table of shipments). */
  detail?: SafeHtml | '';
  /** Fields the person may fill in the confirming form itself (why an app is uninstalled). */
  inputs?: SafeHtml | '';
}

/**
 * The second question before anything is lost (CONTRACT.md, "The dashboard's manners"): a page of
 * its own, reached by GET, that changes nothing; only its POST, with the CSRF token, does the work.
 */
export function confirmationBody(csrf: string, c: Confirmation): SafeHtml {
  const fields = Object.entries(c.fields ?? {});
  const carried = html`${csrfField(csrf)}${fields.map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<input type="hidden" name="confirmed" value="yes">`;
  const buttons = html`<button class="danger" type="submit">${c.confirm}</button>
<a class="button secondary" href="${c.back}">Cancel</a>`;
  return html`<section class="card narrow confirm" aria-labelledby="confirm-title">
<h1 id="confirm-title">${c.question}</h1>
<p>This cannot be undone. What goes with it:</p>
<ul class="lost">${c.lost.map((item) => html`<li>${item}</li>`)}</ul>
${c.detail ?? ''}
${
  c.inputs
    ? html`<form class="stack" method="post" action="${c.action}">
${carried}
${c.inputs}
<div class="row">${buttons}</div>
</form>`
    : html`<form class="row" method="post" action="${c.action}">
${carried}
${buttons}
</form>`
}
</section>`;
}

/** The link that asks the second question: a GET of the confirmation page, styled as its button. */
export function confirmLink(href: string, label: string, kind: 'danger' | 'secondary' = 'danger'): SafeHtml {
  return html`<a class="button ${kind}" href="${href}">${label}</a>`;
}

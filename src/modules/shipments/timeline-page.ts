import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import { type FieldError, fieldErrorsOf, fieldMessage, invalidAttrs } from '../../web/fields.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { type Form, listField, requiredField, selected, textField, timeTag } from '../../web/pages/common.ts';
import { allows } from '../accounts/roles.ts';
import { withTrackingUrl } from '../recipients/shipment-urls.ts';
import { isCountry, subStatusCatalogue } from '../tracking/catalogue.ts';
import { type CheckpointInput, listCheckpoints, targetOf } from '../tracking/checkpoints.ts';
import type { Checkpoint, Location } from '../tracking/fields.ts';
import { SHIPMENT_STATUSES, type ShipmentStatus } from './lifecycle.ts';
import type { TrackedShipment } from './present.ts';

/** The newest checkpoints the page shows; the API pages on past them. */
const SHOWN = 100;

const words = (code: string) => code.replaceAll('_', ' ').replaceAll('.', ': ');

/** City, region, country: what a person reads as the place. */
export function placeOf(location: Location | null): string {
  if (!location) return '';
  return [location.city, location.region, location.country].filter(Boolean).join(', ');
}

function checkpointItem(checkpoint: Checkpoint, now: Date): SafeHtml {
  const place = placeOf(checkpoint.location);
  return html`<li class="checkpoint">
<div class="event-head">${timeTag(checkpoint.occurred_at, now)}${
    checkpoint.status ? html`<span class="badge">${words(checkpoint.status)}</span>` : ''
  }${checkpoint.sub_status ? html`<span class="badge">${words(checkpoint.sub_status)}</span>` : ''}${
    checkpoint.applied ? '' : html`<span class="badge warning">not applied</span>`
  }</div>
${place ? html`<span class="place">${place}</span>` : ''}
<p class="checkpoint-message">${checkpoint.message}</p>
<span class="muted small">From ${checkpoint.source}</span>
</li>`;
}

/** The shipment's tracking facts: carrier, its number, the estimate, proof of delivery, the recipient's link. */
function trackingFacts(shipment: TrackedShipment & { tracking_url: string }): SafeHtml {
  const field = (label: string, value: SafeHtml | string | null) =>
    html`<dt>${label}</dt><dd>${value || '—'}</dd>`;
  const estimate = shipment.estimated_delivery;
  const proof = shipment.proof_of_delivery;
  return html`<section class="card" aria-labelledby="tracking-heading"><h2 id="tracking-heading">Tracking</h2><dl class="fields">
${field('Carrier', shipment.carrier ? html`${shipment.carrier.name} <code>${shipment.carrier.code}</code>` : null)}
${field('Carrier tracking number', shipment.carrier_tracking_number ? html`<code>${shipment.carrier_tracking_number}</code>` : null)}
${field('Sub-status', shipment.sub_status ? html`<span class="badge">${words(shipment.sub_status)}</span>` : null)}
${field(
  'Estimated delivery',
  estimate
    ? html`${timeTag(estimate.earliest)} to ${timeTag(estimate.latest)} (from the ${estimate.source})`
    : null,
)}
${field(
  'Proof of delivery',
  proof
    ? html`${proof.method}${proof.signed_by ? `, signed by ${proof.signed_by}` : ''}, ${timeTag(proof.received_at)}`
    : null,
)}
</dl>
${
  shipment.tracking_url
    ? html`<p><label>Recipient's tracking page <input class="copy secret" name="tracking_url" value="${shipment.tracking_url}" readonly></label>
<a href="${shipment.tracking_url}" rel="noopener" target="_blank">Open the tracking page</a></p>`
    : ''
}
</section>`;
}

function checkpointForm(view: DashboardView, shipment: TrackedShipment, form: Form, errors: FieldError[]) {
  if (!allows(view.access.scopes, 'shipments:write')) return '';
  const value = (name: string) => listField(form, name)[0] ?? '';
  const input = (name: string, label: string, attrs: SafeHtml) =>
    html`<label>${label} <input name="${name}" value="${value(name)}"${attrs}${invalidAttrs(errors, name)}>${fieldMessage(errors, name)}</label>`;
  return html`<form class="stack card" method="post" action="/dashboard/shipments/${encodeURIComponent(shipment.id)}/checkpoints" aria-labelledby="add-checkpoint">
<h2 id="add-checkpoint">Add a checkpoint</h2>
${csrfField(view.csrf)}
<div class="row">
${input('occurred_at', 'When (UTC)', html` type="datetime-local" required`)}
${input('city', 'City (optional)', html` maxlength="100"`)}
${input('region', 'Region (optional)', html` maxlength="100"`)}
${input('country', 'Country code (optional)', html` maxlength="2" size="4" autocapitalize="characters" placeholder="DE"`)}
</div>
<label>Message <textarea name="message" required maxlength="500" rows="2"${invalidAttrs(errors, 'message')}>${value('message')}</textarea>${fieldMessage(errors, 'message')}</label>
<div class="row">
<label>New status (optional) <select name="status"${invalidAttrs(errors, 'status')}><option value="">No change</option>${SHIPMENT_STATUSES.map(
    (s) => html`<option value="${s}"${selected(s === value('status'))}>${words(s)}</option>`,
  )}</select>${fieldMessage(errors, 'status')}</label>
<label>Sub-status (optional) <select name="sub_status"${invalidAttrs(errors, 'sub_status')}><option value="">None</option>${subStatusCatalogue().map(
    (s) =>
      html`<option value="${s.code}"${selected(s.code === value('sub_status'))}>${words(s.code)}</option>`,
  )}</select>${fieldMessage(errors, 'sub_status')}</label>
</div>
<p class="muted small">A checkpoint older than the newest one, or one whose status lies behind the shipment's, is kept in the timeline and moves nothing.</p>
<div><button type="submit">Add checkpoint</button></div>
</form>`;
}

/** The tracking card, the timeline newest first, and the form that adds a checkpoint. */
export async function timelineSection(
  ctx: AppContext,
  view: DashboardView,
  shipment: TrackedShipment,
  form: Form = {},
  errors: FieldError[] = [],
): Promise<SafeHtml> {
  const [page, withUrl] = await Promise.all([
    listCheckpoints(ctx, targetOf(view.access, shipment.id), { limit: SHOWN }),
    withTrackingUrl(ctx, view.access.tenantId, shipment),
  ]);
  const now = ctx.clock.now();
  return html`${trackingFacts(withUrl)}
<h2>Timeline</h2>
${
  page.data.length === 0
    ? html`<p class="empty">No checkpoints yet: the carrier has reported nothing.</p>`
    : html`<ol class="timeline checkpoints" aria-label="Checkpoints, newest first">${page.data.map((c) => checkpointItem(c, now))}</ol>${
        page.next_cursor
          ? html`<p class="muted small">The newest ${SHOWN} are shown; GET /v1/shipments/${shipment.id}/checkpoints lists all.</p>`
          : ''
      }`
}
${checkpointForm(view, shipment, form, errors)}`;
}

function refuse(field: string, message: string): never {
  throw new AppError('validation.failed', message, { errors: [{ path: `/${field}`, message }] }, 422);
}

/** A datetime-local value (taken as UTC), or a time with its own offset or Z. */
function readTime(raw: string): string {
  const withZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(raw) ? raw : `${raw}${raw.length === 16 ? ':00' : ''}Z`;
  const at = new Date(withZone);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(raw) || Number.isNaN(at.getTime()))
    refuse('occurred_at', 'Give the date and time it happened, e.g. 2026-12-02 14:30.');
  return at.toISOString();
}

/** The form as a checkpoint; each bad field refused in words, before anything is written. */
export function readCheckpointForm(form: Form): CheckpointInput {
  const occurredAt = readTime(requiredField(form, 'occurred_at', 'When', 40));
  const city = textField(form, 'city', 'City', 100);
  const region = textField(form, 'region', 'Region', 100);
  const country = textField(form, 'country', 'Country code', 8)?.toUpperCase() ?? null;
  if (country !== null && !isCountry(country))
    refuse('country', `${country} is not a country code: use the two letters of ISO 3166-1, e.g. DE or US.`);
  const message = requiredField(form, 'message', 'Message', 500);
  const status = textField(form, 'status', 'Status', 32);
  if (status !== null && !(SHIPMENT_STATUSES as readonly string[]).includes(status))
    refuse('status', 'Choose a status from the list.');
  const location = city || region || country ? { city, region, country } : null;
  return {
    occurred_at: occurredAt,
    location,
    message,
    status: status as ShipmentStatus | null,
    sub_status: textField(form, 'sub_status', 'Sub-status', 64),
  };
}

/** What the service's refusals say to a person (its own messages name API paths). */
const IN_WORDS: Partial<Record<string, string>> = {
  'tracking.invalid_country': 'That is not a country code: use the two letters of ISO 3166-1, e.g. DE or US.',
  'tracking.invalid_sub_status':
    'That sub-status goes with another status: choose the status it belongs to, or no sub-status.',
  'tracking.invalid_message': 'The message is longer than 500 characters.',
};

/** The fields an AppError names and the words to show beside them (the service's /location/country is the form's country). */
export function checkpointFieldErrors(error: AppError): FieldError[] {
  return fieldErrorsOf(error, { byCode: IN_WORDS });
}

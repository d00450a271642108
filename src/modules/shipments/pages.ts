import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { Page } from '../../lib/paging.ts';
import { allows } from '../../modules/accounts/roles.ts';
import {
  EXCEPTION_REASONS,
  type ExceptionReason,
  nextStatuses,
  SHIPMENT_STATUSES,
} from '../../modules/shipments/lifecycle.ts';
import {
  getShipment,
  listEvents,
  listShipments,
  moveShipment,
  type Shipment,
  shipmentCarriers,
  type TrackedShipment,
} from '../../modules/shipments/service.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import type { FieldError } from '../../web/fields.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { formatMoney } from '../../web/money.ts';
import { choiceField, type Form, nextLink, selected, timeTag } from '../../web/pages/common.ts';
import { formPost, pageGet } from '../../web/pages/page-routes.ts';
import { requireScope } from '../accounts/access.ts';
import { applyCheckpoint, targetOf } from '../tracking/checkpoints.ts';
import { eventRows } from './event-pages.ts';
import { checkpointFieldErrors, readCheckpointForm, timelineSection } from './timeline-page.ts';

const LIST = '/dashboard/shipments';

export function statusBadge(status: string) {
  const tone = status === 'delivered' ? ' ok' : status === 'exception' || status === 'returned' ? ' bad' : '';
  return html`<span class="badge${tone}">${status.replaceAll('_', ' ')}</span>`;
}

function amount(shipment: Shipment): string {
  return shipment.cod_amount_minor === null
    ? `Prepaid (${shipment.currency})`
    : `${formatMoney(shipment.cod_amount_minor, shipment.currency)} on delivery`;
}

function shipmentLink(shipment: Shipment) {
  return html`<a href="${LIST}/${encodeURIComponent(shipment.id)}">${shipment.recipient_name}</a>`;
}

function statusForm(view: DashboardView, shipment: Shipment) {
  const next = nextStatuses(shipment.status);
  if (next.length === 0) return html`<p class="muted">${shipment.status} is final: no more moves.</p>`;
  if (!allows(view.access.scopes, 'shipments:write')) return '';
  return html`<form class="row card" method="post" action="${LIST}/${encodeURIComponent(shipment.id)}/status">
${csrfField(view.csrf)}
<label>Move to <select name="status">${next.map((s) => html`<option value="${s}">${s.replaceAll('_', ' ')}</option>`)}</select></label>
${
  next.includes('exception')
    ? html`<label>Exception reason (for exception) <select name="exception_reason">${EXCEPTION_REASONS.map(
        (r) => html`<option value="${r}">${r}</option>`,
      )}</select></label>`
    : ''
}
<div><button type="submit">Change status</button></div>
</form>`;
}

async function detailBody(
  ctx: AppContext,
  view: DashboardView,
  shipment: TrackedShipment,
  form: Form = {},
  errors: FieldError[] = [],
) {
  const events = await listEvents(ctx, view.access, { shipment_id: shipment.id, limit: 100 });
  const now = ctx.clock.now();
  const field = (label: string, value: SafeHtml | string | null) =>
    html`<dt>${label}</dt><dd>${value ?? '—'}</dd>`;
  return html`<h1>${shipment.recipient_name} ${statusBadge(shipment.status)}</h1>
${statusForm(view, shipment)}
<section class="card"><dl class="fields">
${field('Tracking number', html`<code class="tracking-number">${shipment.tracking_number}</code>`)}${field('Id', html`<code data-copy="shipment id">${shipment.id}</code>`)}
${field('Status', shipment.status)}${field('Exception reason', shipment.exception_reason)}
${field('Recipient e-mail', shipment.recipient_email)}${field('Recipient phone', shipment.recipient_phone)}
${field('Your reference', shipment.external_ref)}${field('Merchant account', shipment.customer_account_id)}
${field('Payment', amount(shipment))}${field('Mode', shipment.livemode ? 'live' : 'test')}
${field('Created', timeTag(shipment.created_at, now))}${field('Updated', timeTag(shipment.updated_at, now))}
</dl></section>
${await timelineSection(ctx, view, shipment, form, errors)}
<h2>Parcels</h2>
<div class="table-wrap"><table><thead><tr><th>Weight</th><th>Reference</th><th>Size (mm)</th></tr></thead><tbody>
${shipment.parcels.map(
  (p) =>
    html`<tr><td>${(p.weight_grams / 1000).toLocaleString('en')} kg</td><td>${p.reference ?? '—'}</td><td>${
      p.length_mm ? `${p.length_mm} × ${p.width_mm ?? '?'} × ${p.height_mm ?? '?'}` : '—'
    }</td></tr>`,
)}</tbody></table></div>
<h2>Events sent</h2>
<p class="muted small">The messages webhooks and apps received about this shipment; the timeline above is its history.</p>
${eventRows(events.data, { openFirst: false, now })}`;
}

interface ListFilters {
  status: string | undefined;
  q: string | undefined;
  account: string | undefined;
  carrier: string | undefined;
}

function listBody(
  view: DashboardView,
  page: Page<Shipment>,
  filters: ListFilters,
  carriers: ReadonlyArray<{ code: string; name: string }>,
  now: Date,
) {
  const { status } = filters;
  const carrierFilter = carriers.length
    ? html`<label class="check">Carrier <select name="carrier"><option value="">Any</option>${carriers.map(
        (c) =>
          html`<option value="${c.code}"${selected(c.code === filters.carrier)}>${c.name || c.code}</option>`,
      )}</select></label>`
    : '';
  const accounts = view.customerAccounts.length
    ? html`<label class="check">Merchant account <select name="account"><option value="">All</option>${view.customerAccounts.map(
        (a) => html`<option value="${a.id}"${selected(a.id === filters.account)}>${a.name}</option>`,
      )}</select></label>`
    : '';
  const accountName = (id: string | null) =>
    (id && view.customerAccounts.find((a) => a.id === id)?.name) || '';
  return html`<div class="heading"><h1>Shipments</h1>${
    allows(view.access.scopes, 'shipments:write')
      ? html`<a class="button" href="${LIST}/new">New shipment</a>`
      : ''
  }</div>
<form class="inline card filters" method="get" action="${LIST}" role="search" aria-label="Shipments">
<label class="check">Search <input type="search" name="q" value="${filters.q ?? ''}" maxlength="200" placeholder="Tracking number, reference or recipient"></label>
<label class="check">Status <select name="status"><option value="">Any</option>${SHIPMENT_STATUSES.map(
    (s) => html`<option value="${s}"${selected(s === status)}>${s.replaceAll('_', ' ')}</option>`,
  )}</select></label>
${carrierFilter}${accounts}
<button class="secondary" type="submit">Search</button>
</form>
${
  page.data.length === 0
    ? html`<p class="empty">${filters.q || status || filters.account || filters.carrier ? 'No shipment matches.' : `No shipments here yet${view.livemode ? '' : ' in test data'}.`}</p>`
    : html`<div class="table-wrap"><table><thead><tr><th>Recipient</th><th>Status</th><th>Created</th><th>Tracking</th><th>Reference</th><th>Merchant account</th><th>Payment</th></tr></thead><tbody>
${page.data.map(
  (s) =>
    html`<tr><td>${shipmentLink(s)}</td><td>${statusBadge(s.status)}</td><td>${timeTag(s.created_at, now)}</td><td><code class="tracking-number">${s.tracking_number}</code></td><td>${s.external_ref ?? ''}</td><td>${accountName(s.customer_account_id)}</td><td>${amount(s)}</td></tr>`,
)}</tbody></table></div>`
}
${nextLink(LIST, { status, q: filters.q, account: filters.account, carrier: filters.carrier }, page.next_cursor)}`;
}

/** Shipments list, detail, and the status move. */
export function shipmentPages(app: FastifyInstance, ctx: AppContext): void {
  pageGet<
    Record<string, never>,
    { status?: string; cursor?: string; q?: string; account?: string; carrier?: string }
  >(app, ctx, LIST, async (view, { query }) => {
    const status = (SHIPMENT_STATUSES as readonly string[]).includes(query.status ?? '')
      ? query.status
      : undefined;
    const q = query.q?.trim().slice(0, 200) || undefined;
    // Only an account of the company's own list; another id is as if none was chosen.
    const account = view.customerAccounts.find((a) => a.id === query.account)?.id;
    // Only a carrier the company's shipments name; another code is as if none was chosen.
    const carriers = await shipmentCarriers(ctx, view.access);
    const carrier = carriers.find((c) => c.code === query.carrier)?.code;
    const page = await listShipments(ctx, view.access, {
      status,
      ...(q ? { query: q } : {}),
      ...(account ? { customer_account_id: account } : {}),
      ...(carrier ? { carrier_code: carrier } : {}),
      cursor: query.cursor?.slice(0, 200),
    });
    return {
      title: 'Shipments',
      path: LIST,
      body: listBody(view, page, { status, q, account, carrier }, carriers, ctx.clock.now()),
    };
  });

  pageGet<{ id: string }>(app, ctx, `${LIST}/:id`, async (view, { params, retry }) => {
    const shipment = await getShipment(ctx, view.access, params.id);
    // After a refused checkpoint: its fields as typed and the errors beside them.
    const body = await detailBody(ctx, view, shipment, retry?.values, retry?.errors);
    return { title: shipment.recipient_name, path: LIST, body };
  });

  formPost<{ id: string }>(app, ctx, `${LIST}/:id/status`, {
    async run(view, form, { id }) {
      const status = choiceField(form, 'status', 'Status', SHIPMENT_STATUSES);
      const reason: ExceptionReason | null =
        status === 'exception' ? choiceField(form, 'exception_reason', 'Reason', EXCEPTION_REASONS) : null;
      const moved = await moveShipment(ctx, view.access, id, { status, exception_reason: reason });
      return {
        redirect: `${LIST}/${encodeURIComponent(id)}`,
        message: `Moved to ${moved.status.replaceAll('_', ' ')}.`,
      };
    },
    // An unknown or foreign shipment throws again here and reaches the error page.
    async retry(view, _form, { id }) {
      const shipment = await getShipment(ctx, view.access, id);
      return { title: shipment.recipient_name, path: LIST, body: await detailBody(ctx, view, shipment) };
    },
  });

  formPost<{ id: string }>(app, ctx, `${LIST}/:id/checkpoints`, {
    async run(view, form, { id }) {
      requireScope(view.access, 'shipments:write');
      const shipment = await getShipment(ctx, view.access, id);
      const back = `${LIST}/${encodeURIComponent(id)}`;
      const input = readCheckpointForm(form);
      const { applied } = await applyCheckpoint(ctx, {
        ...targetOf(view.access, id),
        input,
        source: 'dashboard',
      });
      const newest = shipment.latest_checkpoint?.occurred_at;
      const why =
        newest && input.occurred_at < newest
          ? 'older than the newest checkpoint'
          : "its status lies behind the shipment's";
      return {
        redirect: back,
        message: applied ? 'Checkpoint added.' : `Kept in the timeline, not applied: ${why}.`,
      };
    },
    // A refusal goes back to the shipment's page, the fields as typed, each error beside its field.
    back: ({ id }) => `${LIST}/${encodeURIComponent(id)}`,
    fieldErrors: checkpointFieldErrors,
    refused: 'The checkpoint was not added: see the form below.',
    async retry(view, form, { id }) {
      const shipment = await getShipment(ctx, view.access, id);
      return {
        title: shipment.recipient_name,
        path: LIST,
        body: await detailBody(ctx, view, shipment, form),
      };
    },
  });
}

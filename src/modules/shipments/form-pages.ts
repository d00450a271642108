import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { allows } from '../../modules/accounts/roles.ts';
import { type CreateShipmentInput, createShipment } from '../../modules/shipments/service.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { parseMajorAmount } from '../../web/money.ts';
import {
  checked,
  choiceField,
  type Form,
  listField,
  requiredField,
  selected,
  textField,
} from '../../web/pages/common.ts';
import { formPost, pageGet } from '../../web/pages/page-routes.ts';

const CURRENCIES = Intl.supportedValuesOf('currency');

/** The form's fields as typed, so an error re-renders them as the person left them. */
function value(form: Form, name: string, fallback = ''): string {
  return listField(form, name)[0] ?? fallback;
}

function shipmentForm(view: DashboardView, form: Form) {
  const accountChoice = view.customerAccounts.length
    ? html`<label>Merchant account <select name="customer_account_id">
<option value="">None (the company itself)</option>${view.customerAccounts.map(
        (a) =>
          html`<option value="${a.id}"${selected(a.id === value(form, 'customer_account_id', view.customerAccountId ?? ''))}>${a.name}</option>`,
      )}</select></label>`
    : '';
  const mode = value(form, 'payment_mode', 'prepaid');
  const status = value(form, 'status', 'confirmed');
  return html`<h1>New shipment</h1>
<form class="stack card" method="post" action="/dashboard/shipments">
${csrfField(view.csrf)}
<label>Recipient name <input name="recipient_name" required maxlength="200" value="${value(form, 'recipient_name')}"></label>
<div class="row">
<label>Recipient e-mail (optional) <input type="email" name="recipient_email" maxlength="254" value="${value(form, 'recipient_email')}"></label>
<label>Recipient phone (optional) <input type="tel" name="recipient_phone" maxlength="32" value="${value(form, 'recipient_phone')}"></label>
</div>
<label>Your reference (optional) <input name="external_ref" maxlength="100" value="${value(form, 'external_ref')}"></label>
${accountChoice}
<fieldset class="row">
<legend>Payment</legend>
<label class="check"><input type="radio" name="payment_mode" value="prepaid"${checked(mode !== 'cod')}> Prepaid</label>
<label class="check"><input type="radio" name="payment_mode" value="cod"${checked(mode === 'cod')}> Cash on delivery</label>
</fieldset>
<div class="row">
<label>Amount to collect (cash on delivery) <input name="cod_amount" inputmode="decimal" maxlength="20" placeholder="12.50" value="${value(form, 'cod_amount')}"></label>
<label>Currency <input name="currency" required maxlength="3" list="currencies" autocapitalize="characters" value="${value(form, 'currency', 'EUR')}"></label>
<label>Parcel weight (grams) <input type="number" name="weight_grams" required min="1" max="10000000" step="1" value="${value(form, 'weight_grams', '1000')}"></label>
</div>
<datalist id="currencies">${CURRENCIES.map((code) => html`<option value="${code}">`)}</datalist>
<fieldset class="row">
<legend>Start as</legend>
<label class="check"><input type="radio" name="status" value="confirmed"${checked(status !== 'draft')}> Confirmed</label>
<label class="check"><input type="radio" name="status" value="draft"${checked(status === 'draft')}> Draft</label>
</fieldset>
<button type="submit">Create shipment</button>
</form>`;
}

const PHONE = /^\+?[0-9 ()./-]{3,30}$/;

/** The form as the service's input; bad fields are validation errors with the field named. */
export function readShipmentForm(form: Form): CreateShipmentInput {
  const currency = requiredField(form, 'currency', 'Currency', 3).toUpperCase();
  const paymentMode = choiceField(form, 'payment_mode', 'Payment', ['prepaid', 'cod'] as const);
  const codText = textField(form, 'cod_amount', 'Amount', 20);
  const weight = Number(requiredField(form, 'weight_grams', 'Parcel weight', 9));
  if (!Number.isInteger(weight) || weight < 1 || weight > 10_000_000) {
    throw new AppError('validation.failed', 'The parcel weight is a whole number of grams from 1', {
      errors: [{ path: '/weight_grams', message: 'an integer from 1 to 10000000' }],
    });
  }
  const phone = textField(form, 'recipient_phone', 'Recipient phone', 32);
  if (phone && !PHONE.test(phone)) {
    throw new AppError('validation.failed', 'The phone number has characters a phone number does not', {
      errors: [{ path: '/recipient_phone', message: 'digits, spaces, + ( ) . / -' }],
    });
  }
  const email = textField(form, 'recipient_email', 'Recipient e-mail', 254);
  if (email && !/^[^\s@]+@[^\s@]+$/.test(email)) {
    throw new AppError('validation.failed', 'The e-mail address is not valid', {
      errors: [{ path: '/recipient_email', message: 'an e-mail address' }],
    });
  }
  return {
    recipient_name: requiredField(form, 'recipient_name', 'Recipient name', 200),
    recipient_email: email,
    recipient_phone: phone,
    external_ref: textField(form, 'external_ref', 'Your reference', 100),
    customer_account_id: textField(form, 'customer_account_id', 'Merchant account', 64),
    payment_mode: paymentMode,
    // A prepaid shipment ignores a stray amount rather than refusing the whole form.
    cod_amount_minor: paymentMode === 'cod' && codText ? parseMajorAmount(codText, currency) : null,
    currency,
    parcels: [{ weight_grams: weight }],
    status: choiceField(form, 'status', 'Status', ['draft', 'confirmed'] as const),
  };
}

/** The create-a-shipment form and its POST. */
export function shipmentFormPages(app: FastifyInstance, ctx: AppContext): void {
  pageGet(app, ctx, '/dashboard/shipments/new', async (view) => {
    if (!allows(view.access.scopes, 'shipments:write')) throw new AppError('auth.insufficient_scope');
    return { title: 'New shipment', path: '/dashboard/shipments', body: shipmentForm(view, {}) };
  });

  formPost(app, ctx, '/dashboard/shipments', {
    async run(view, form) {
      const shipment = await createShipment(ctx, view.access, readShipmentForm(form));
      return {
        redirect: `/dashboard/shipments/${encodeURIComponent(shipment.id)}`,
        message: `Shipment ${shipment.tracking_number} created.`,
      };
    },
    async retry(view, form) {
      return { title: 'New shipment', path: '/dashboard/shipments', body: shipmentForm(view, form) };
    },
  });
}

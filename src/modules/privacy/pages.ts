import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { choiceField, textField, timeTag } from '../../web/pages/common.ts';
import { confirmationBody } from '../../web/pages/confirm.ts';
import { formPost, pageGet } from '../../web/pages/page-routes.ts';
import {
  createPrivacyRequest,
  type ErasurePreview,
  listPrivacyRequests,
  type PrivacyRequest,
  previewErasure,
} from './service.ts';

const PRIVACY = '/dashboard/privacy-requests';

const STATUS_WORDS: Record<PrivacyRequest['status'], string> = {
  no_apps_to_tell: 'no app could see these shipments: nobody was told',
  sending: 'being sent',
  delivered: 'every app got it',
  failed: 'an app did not get it',
};

function requestRow(request: PrivacyRequest) {
  const messages = request.messages.map(
    (m) =>
      html`<li><code>${m.app_id}</code>: ${m.shipment_count} shipments, <span class="badge">${m.status}</span></li>`,
  );
  return html`<tr><td>${timeTag(request.created_at)}</td><td>${request.kind === 'redact' ? 'Erase' : 'Data request'}</td>
<td>${request.recipient.email ?? ''} ${request.recipient.phone ?? ''}</td><td>${request.shipment_count}</td>
<td>${STATUS_WORDS[request.status]}${messages.length > 0 ? html`<ul>${messages}</ul>` : ''}</td></tr>`;
}

function erasureQuestion(
  csrf: string,
  preview: ErasurePreview,
  given: { email: string | null; phone: string | null },
) {
  const live = preview.shipments.filter((s) => s.livemode);
  const who = [preview.recipient.email, preview.recipient.phone].filter(Boolean).join(', ');
  const rows = preview.shipments.map(
    (
      s,
    ) => html`<tr><td><a href="/dashboard/shipments/${s.id}">${s.recipient_name}</a></td><td><code>${s.tracking_number}</code></td><td>${s.reference ?? ''}</td>
<td><span class="badge">${s.status.replaceAll('_', ' ')}</span></td><td>${s.livemode ? html`<span class="badge live">Live</span>` : 'Test'}</td></tr>`,
  );
  const detail =
    preview.shipments.length === 0
      ? html`<p class="empty">No shipment of this company has this recipient: only the installed apps are told.</p>`
      : html`<div class="table-wrap"><table><caption>The shipments it changes</caption><thead><tr><th>Recipient</th><th>Tracking</th><th>Reference</th><th>Status</th><th>Data</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  return confirmationBody(csrf, {
    question: `Erase ${who}?`,
    lost: [
      live.length === 0
        ? 'No live shipment changes.'
        : `${live.length} live shipment${live.length === 1 ? '' : 's'} change${live.length === 1 ? 's' : ''}: the recipient's name, e-mail and phone become [redacted] there, on their events and on every message sent from now on.`,
      `${preview.shipments.length - live.length} test shipment(s) change the same way.`,
      'Every installed app that can see these shipments is told (customer.redact). Tracking numbers and statuses stay.',
    ],
    detail,
    action: PRIVACY,
    confirm: 'Erase recipient',
    back: PRIVACY,
    fields: { kind: 'redact', email: given.email ?? '', phone: given.phone ?? '' },
  });
}

async function privacyBody(ctx: AppContext, view: DashboardView) {
  const requests = await listPrivacyRequests(ctx, view.user.userId, view.tenantId, { limit: 100 });
  return html`<h1>Privacy requests</h1>
<p class="muted">When a recipient asks what you hold about them, or to be erased, file it here: every installed app
that can see their shipments is told (customer.data_request or customer.redact). Erasing also replaces the
recipient's name, e-mail and phone on your shipments, their events and every message sent from now on
(retries and replays included); tracking and statuses stay. An erasure is listed without the contact.</p>
<form class="stack card" method="post" action="${PRIVACY}">
${csrfField(view.csrf)}
<h2>New request</h2>
<fieldset class="row"><legend>Kind</legend>
<label class="check"><input type="radio" name="kind" value="data_request" checked> Data request</label>
<label class="check"><input type="radio" name="kind" value="redact"> Erase</label>
</fieldset>
<label>Recipient's e-mail <input name="email" type="email" maxlength="254"></label>
<label>Recipient's phone <input name="phone" maxlength="40"></label>
<button type="submit">File the request</button>
</form>
${
  requests.data.length === 0
    ? html`<p class="muted">No privacy request yet.</p>`
    : html`<div class="table-wrap"><table><thead><tr><th>Filed</th><th>Kind</th><th>Recipient</th><th>Shipments</th><th>Apps told</th></tr></thead>
<tbody>${requests.data.map(requestRow)}</tbody></table></div>`
}`;
}

/** The company's privacy requests in the dashboard: the history and the form (owners and admins). */
export function privacyPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const privacyPage = async (view: DashboardView) => ({
      title: 'Privacy requests',
      path: PRIVACY,
      body: await privacyBody(ctx, view),
    });
    pageGet(app, ctx, PRIVACY, privacyPage);
    formPost(app, ctx, PRIVACY, {
      retry: privacyPage,
      async run(view, form) {
        const kind = choiceField(form, 'kind', 'Kind', ['data_request', 'redact'] as const);
        const recipient = {
          email: textField(form, 'email', 'E-mail', 254),
          phone: textField(form, 'phone', 'Phone', 40),
        };
        // An erasure asks once more, naming the shipments it changes (live ones first); the
        // contact travels on in the form's body, never in an address.
        if (kind === 'redact' && form.confirmed !== 'yes') {
          const preview = await previewErasure(ctx, view.user.userId, view.tenantId, recipient);
          return {
            page: { title: 'Erase this recipient?', path: PRIVACY },
            body: erasureQuestion(view.csrf, preview, recipient),
          };
        }
        const request = await createPrivacyRequest(ctx, view.user.userId, view.tenantId, {
          kind,
          recipient,
        });
        const told = request.messages.length;
        return {
          redirect: PRIVACY,
          message:
            told === 0
              ? 'Request filed. No installed app could see these shipments, so nobody was told.'
              : `Request filed: ${told} message${told === 1 ? '' : 's'} on the way to the apps.`,
        };
      },
    });
  };
}

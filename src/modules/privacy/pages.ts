import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { choiceField, formatTime, textField } from '../../web/pages/common.ts';
import { formPost, pageGet } from '../../web/pages/page-routes.ts';
import { createPrivacyRequest, listPrivacyRequests, type PrivacyRequest } from './service.ts';

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
  return html`<tr><td>${formatTime(request.created_at)}</td><td>${request.kind === 'redact' ? 'Erase' : 'Data request'}</td>
<td>${request.recipient.email ?? ''} ${request.recipient.phone ?? ''}</td><td>${request.shipment_count}</td>
<td>${STATUS_WORDS[request.status]}${messages.length > 0 ? html`<ul>${messages}</ul>` : ''}</td></tr>`;
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
        const request = await createPrivacyRequest(ctx, view.user.userId, view.tenantId, {
          kind: choiceField(form, 'kind', 'Kind', ['data_request', 'redact'] as const),
          recipient: {
            email: textField(form, 'email', 'E-mail', 254),
            phone: textField(form, 'phone', 'Phone', 40),
          },
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

import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import {
  type ApiToken,
  createApiToken,
  listApiTokens,
  revokeApiToken,
} from '../../modules/accounts/api-tokens.ts';
import { isScope, SCOPE_DESCRIPTIONS, SCOPES, scopesOfRole } from '../../modules/accounts/roles.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import { type FormRetry, fieldErrorsOf, fieldMessage, invalidAttrs, typedValue } from '../../web/fields.ts';
import { html } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import {
  checked,
  choiceField,
  formatTime,
  listField,
  requiredField,
  selected,
  textField,
  timeTag,
} from '../../web/pages/common.ts';
import { confirmationBody, confirmLink } from '../../web/pages/confirm.ts';
import { formPost, pageGet } from '../../web/pages/page-routes.ts';

const TOKENS = '/dashboard/api-tokens';

function accountName(view: DashboardView, id: string | null): string {
  if (!id) return 'All';
  return view.customerAccounts.find((a) => a.id === id)?.name ?? view.membership.customer_account_name ?? id;
}

function tokenRow(view: DashboardView, token: ApiToken) {
  const revoke = token.revoked_at
    ? html`<span class="badge bad">revoked ${timeTag(token.revoked_at)}</span>`
    : confirmLink(`${TOKENS}/${encodeURIComponent(token.id)}/revoke`, 'Revoke');
  return html`<tr><td>${token.name}<br><code>${token.token_hint}</code></td><td>${token.mode}${token.audience === 'mcp' ? html`<br><span class="badge">agents (/mcp)</span>` : ''}</td><td>${revoke}</td>
<td>${token.scopes.join(' ')}</td><td>${accountName(view, token.customer_account_id)}</td><td>${timeTag(token.created_at)}</td><td>${timeTag(token.last_used_at) || 'never'}</td></tr>`;
}

function tokenForm(view: DashboardView, retry: FormRetry | null) {
  const held = scopesOfRole(view.membership.role);
  const typed = retry?.values ?? null;
  const errors = retry?.errors ?? [];
  const mode = typed ? typedValue(typed, 'mode') : view.livemode ? 'live' : 'test';
  const chosen = new Set(typed ? listField(typed, 'scopes') : []);
  const account = typedValue(typed, 'customer_account_id');
  const accounts = view.customerAccounts.length
    ? html`<label>Merchant account <select name="customer_account_id"${invalidAttrs(errors, 'customer_account_id')}><option value="">All (the whole company)</option>${view.customerAccounts.map(
        (a) => html`<option value="${a.id}"${selected(a.id === account)}>${a.name}</option>`,
      )}</select>${fieldMessage(errors, 'customer_account_id')}</label>`
    : '';
  return html`<form class="stack card" method="post" action="${TOKENS}">
${csrfField(view.csrf)}
<h2>New API token</h2>
<label>Name <input name="name" required maxlength="100" placeholder="Warehouse integration" value="${typedValue(typed, 'name')}"${invalidAttrs(errors, 'name')}>${fieldMessage(errors, 'name')}</label>
<fieldset class="row"${invalidAttrs(errors, 'mode')}><legend>Mode</legend>
<label class="check"><input type="radio" name="mode" value="test"${checked(mode === 'test')}> Test data</label>
<label class="check"><input type="radio" name="mode" value="live"${checked(mode === 'live')}> Live data</label>
${fieldMessage(errors, 'mode')}</fieldset>
<fieldset class="row"><legend>Works at</legend>
<label class="check"><input type="radio" name="audience" value="v1"${checked(typedValue(typed, 'audience') !== 'mcp')}> The API (<code>/v1</code>)</label>
<label class="check"><input type="radio" name="audience" value="mcp"${checked(typedValue(typed, 'audience') === 'mcp')}> Only the MCP server, for an AI agent that runs without a browser (<code>/mcp</code>)</label>
</fieldset>
<fieldset class="stack"><legend>Scopes</legend>${SCOPES.filter((s) => held.has(s)).map(
    (s) =>
      html`<label class="check"><input type="checkbox" name="scopes" value="${s}"${checked(chosen.has(s))}${invalidAttrs(errors, 'scopes')}> <span><code>${s}</code> ${SCOPE_DESCRIPTIONS[s]}</span></label>`,
  )}${fieldMessage(errors, 'scopes')}</fieldset>
${accounts}
<button type="submit">Create token</button>
</form>`;
}

async function tokensBody(ctx: AppContext, view: DashboardView, retry: FormRetry | null = null) {
  const tokens = await listApiTokens(ctx, view.user.userId, view.tenantId, { limit: 100 });
  return html`<h1>API tokens</h1>
${tokenForm(view, retry)}
${
  tokens.data.length === 0
    ? html`<p class="muted">No API tokens yet.</p>`
    : html`<div class="table-wrap"><table><thead><tr><th>Name</th><th>Mode</th><th>State</th><th>Scopes</th><th>Merchant account</th><th>Created</th><th>Last used</th></tr></thead>
<tbody>${tokens.data.map((t) => tokenRow(view, t))}</tbody></table></div>`
}`;
}

/** API tokens: list, create (the secret shown once), revoke. */
export function tokenPages(app: FastifyInstance, ctx: AppContext): void {
  const tokensPage = async (view: DashboardView, parts?: { retry: FormRetry | null }) => ({
    title: 'API tokens',
    path: TOKENS,
    body: await tokensBody(ctx, view, parts?.retry ?? null),
  });
  pageGet(app, ctx, TOKENS, tokensPage);

  formPost(app, ctx, TOKENS, {
    retry: (view) => tokensPage(view),
    // A refusal goes back to the list, the form as typed, each error beside its field.
    back: () => TOKENS,
    fieldErrors: (error) =>
      fieldErrorsOf(error, {
        labels: { name: 'Name', mode: 'Mode', scopes: 'Scopes', customer_account_id: 'Merchant account' },
      }),
    refused: 'The token was not created: see the form below.',
    async run(view, form) {
      const scopes = listField(form, 'scopes');
      if (scopes.length === 0 || !scopes.every(isScope)) {
        throw new AppError('validation.failed', 'Choose at least one scope', {
          errors: [{ path: '/scopes', message: 'choose at least one' }],
        });
      }
      const token = await createApiToken(ctx, view.user.userId, view.tenantId, {
        name: requiredField(form, 'name', 'Name', 100),
        mode: choiceField(form, 'mode', 'Mode', ['live', 'test'] as const),
        audience: form.audience === 'mcp' ? 'mcp' : 'v1',
        scopes: scopes.filter(isScope),
        customer_account_id: textField(form, 'customer_account_id', 'Merchant account', 64),
      });
      // The only time the secret is shown: a one-time flash kept server-side, never in the URL.
      return {
        redirect: TOKENS,
        message: `Token ${token.name} created (${token.mode}, ${token.scopes.join(' ')}).`,
        secrets: [{ label: 'API token', value: token.token }],
        note: 'It is shown only once; Waybill keeps only a hash of it.',
      };
    },
  });

  pageGet<{ id: string }>(app, ctx, `${TOKENS}/:id/revoke`, async (view, { params }) => {
    const tokens = await listApiTokens(ctx, view.user.userId, view.tenantId, { limit: 100 });
    const token = tokens.data.find((t) => t.id === params.id && !t.revoked_at);
    if (!token) throw new AppError('request.not_found', 'No such token, or it is revoked already');
    const question = `Revoke the token ${token.name}?`;
    const body = confirmationBody(view.csrf, {
      question,
      lost: [
        `Every call with ${token.token_hint} answers 401 from now on: ${token.mode} data, ${token.scopes.join(' ')}.`,
        `Last used: ${formatTime(token.last_used_at) || 'never'}. A revoked token cannot be turned back on; make a new one instead.`,
      ],
      action: `${TOKENS}/${encodeURIComponent(token.id)}/revoke`,
      confirm: 'Revoke token',
      back: TOKENS,
    });
    return { title: question, path: TOKENS, body };
  });

  formPost<{ id: string }>(app, ctx, `${TOKENS}/:id/revoke`, {
    retry: (view) => tokensPage(view),
    async run(view, form, { id }) {
      if (form.confirmed !== 'yes')
        return {
          redirect: `${TOKENS}/${encodeURIComponent(id)}/revoke`,
          message: 'Revoking asks first: confirm below.',
        };
      await revokeApiToken(ctx, view.user.userId, view.tenantId, id);
      return { redirect: TOKENS, message: 'Token revoked: calls with it now answer 401.' };
    },
  });
}

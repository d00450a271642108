import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import {
  addMember,
  createCustomerAccount,
  listCustomerAccounts,
  listMembers,
  type Membership,
  removeMember,
} from '../../modules/accounts/companies.ts';
import { isMerchantRole, managesMembers, ROLES } from '../../modules/accounts/roles.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { choiceField, requiredField, textField, timeTag } from '../../web/pages/common.ts';
import { confirmationBody, confirmLink } from '../../web/pages/confirm.ts';
import { formPost, pageGet } from '../../web/pages/page-routes.ts';

const MEMBERS = '/dashboard/members';

function memberRow(view: DashboardView, member: Membership, accountNames: Map<string, string>) {
  const self = member.user_id === view.user.userId;
  const canRemove = self || managesMembers(view.membership.role);
  return html`<tr><td>${member.name}<br><span class="muted">${member.email}</span></td><td>${member.role.replaceAll('_', ' ')}</td>
<td>${
    canRemove
      ? confirmLink(
          `${MEMBERS}/${encodeURIComponent(member.user_id)}/remove`,
          self ? 'Leave' : `Remove ${member.name}`,
        )
      : ''
  }</td><td>${member.customer_account_id ? (accountNames.get(member.customer_account_id) ?? member.customer_account_id) : 'All'}</td><td>${timeTag(member.created_at)}</td></tr>`;
}

function manageForms(view: DashboardView, accounts: { id: string; name: string }[]) {
  return html`<form class="stack card" method="post" action="${MEMBERS}">
${csrfField(view.csrf)}
<h2>Add a member</h2>
<p class="muted">The person signs up first; then add them by the e-mail they used.</p>
<label>E-mail <input type="email" name="email" required maxlength="254"></label>
<div class="row">
<label>Role <select name="role">${ROLES.map((r) => html`<option value="${r}">${r.replaceAll('_', ' ')}</option>`)}</select></label>
<label>Merchant account (merchant roles only) <select name="customer_account_id"><option value="">None</option>${accounts.map(
    (a) => html`<option value="${a.id}">${a.name}</option>`,
  )}</select></label>
</div>
<button type="submit">Add member</button>
</form>
<form class="stack card" method="post" action="/dashboard/merchant-accounts">
${csrfField(view.csrf)}
<h2>New merchant account</h2>
<label>Name <input name="name" required maxlength="200"></label>
<button type="submit">Create merchant account</button>
</form>`;
}

async function membersBody(ctx: AppContext, view: DashboardView) {
  const [members, accounts] = await Promise.all([
    listMembers(ctx, view.user.userId, view.tenantId, { limit: 100 }),
    listCustomerAccounts(ctx, view.user.userId, view.tenantId, { limit: 100 }),
  ]);
  const names = new Map(accounts.data.map((a) => [a.id, a.name]));
  return html`<h1>Members</h1>
<div class="table-wrap"><table><thead><tr><th>Person</th><th>Role</th><th><span class="sr-only">Actions</span></th><th>Merchant account</th><th>Since</th></tr></thead>
<tbody>${members.data.map((m) => memberRow(view, m, names))}</tbody></table></div>
<h2>Merchant accounts</h2>
${
  accounts.data.length === 0
    ? html`<p class="muted">No merchant accounts yet.</p>`
    : html`<ul class="plain">${accounts.data.map((a) => html`<li>${a.name} <code>${a.id}</code></li>`)}</ul>`
}
${managesMembers(view.membership.role) ? manageForms(view, accounts.data) : ''}`;
}

/** Members (add, remove, leave) and merchant accounts (list, create). */
export function memberPages(app: FastifyInstance, ctx: AppContext): void {
  const membersPage = async (view: DashboardView) => ({
    title: 'Members',
    path: MEMBERS,
    body: await membersBody(ctx, view),
  });
  pageGet(app, ctx, MEMBERS, membersPage);

  formPost(app, ctx, MEMBERS, {
    retry: membersPage,
    async run(view, form) {
      const role = choiceField(form, 'role', 'Role', ROLES);
      const member = await addMember(ctx, view.user.userId, view.tenantId, {
        email: requiredField(form, 'email', 'E-mail', 254),
        role,
        customer_account_id: isMerchantRole(role)
          ? textField(form, 'customer_account_id', 'Merchant account', 64)
          : null,
      });
      return { redirect: MEMBERS, message: `${member.name} is now ${member.role.replaceAll('_', ' ')}.` };
    },
  });

  // The second question (CONTRACT.md, "The dashboard's manners"): a page of its own, by GET, that
  // names the person and what goes with them, and changes nothing.
  pageGet<{ userId: string }>(app, ctx, `${MEMBERS}/:userId/remove`, async (view, { params }) => {
    const members = await listMembers(ctx, view.user.userId, view.tenantId, { limit: 100 });
    const member = members.data.find((m) => m.user_id === params.userId);
    if (!member) throw new AppError('member.not_found');
    const self = member.user_id === view.user.userId;
    const company = view.membership.company_name;
    const question = self ? `Leave ${company}?` : `Remove ${member.name} from ${company}?`;
    const who = self ? 'You' : member.name;
    const body = confirmationBody(view.csrf, {
      question,
      lost: [
        `${who} (${member.email}, ${member.role.replaceAll('_', ' ')}) no longer ${self ? 'see' : 'sees'} ${company}'s shipments, endpoints or settings.`,
        `The app tokens ${self ? 'you' : 'they'} hold for ${company} stop working; the apps ${self ? 'you' : 'they'} approved receive nothing until someone approves them again.`,
        self
          ? 'Coming back needs an owner or admin to add you again.'
          : `Coming back needs an owner or admin to add ${member.name} again.`,
      ],
      action: `${MEMBERS}/${encodeURIComponent(member.user_id)}/remove`,
      confirm: self ? `Leave ${company}` : `Remove ${member.name}`,
      back: MEMBERS,
    });
    return { title: question, path: MEMBERS, body };
  });

  formPost<{ userId: string }>(app, ctx, `${MEMBERS}/:userId/remove`, {
    retry: membersPage,
    async run(view, form, { userId }) {
      // A POST that skipped the question (an old form, a script) is asked it first.
      if (form.confirmed !== 'yes')
        return {
          redirect: `${MEMBERS}/${encodeURIComponent(userId)}/remove`,
          message: 'Removing asks first: confirm below.',
        };
      const members = await listMembers(ctx, view.user.userId, view.tenantId, { limit: 100 });
      const name = members.data.find((m) => m.user_id === userId)?.name;
      await removeMember(ctx, view.user.userId, view.tenantId, userId);
      // Someone who left no longer sees this company: the dashboard picks another, or offers a new one.
      return userId === view.user.userId
        ? { redirect: '/dashboard', message: `You left ${view.membership.company_name}.` }
        : { redirect: MEMBERS, message: name ? `${name} was removed.` : 'Member removed.' };
    },
  });

  formPost(app, ctx, '/dashboard/merchant-accounts', {
    retry: membersPage,
    async run(view, form) {
      const account = await createCustomerAccount(ctx, view.user.userId, view.tenantId, {
        name: requiredField(form, 'name', 'Name', 200),
      });
      return { redirect: MEMBERS, message: `Merchant account ${account.name} created.` };
    },
  });
}

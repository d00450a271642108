import type { FastifyReply, FastifyRequest, RouteGenericInterface } from 'fastify';
import type { AppContext } from '../context.ts';
import { AppError } from '../lib/errors.ts';
import type { TenantAccess } from '../modules/accounts/access.ts';
import {
  type CustomerAccount,
  listCustomerAccounts,
  type MembershipSummary,
  membershipsOfPerson,
} from '../modules/accounts/companies.ts';
import { scopesOfRole } from '../modules/accounts/roles.ts';
import { getPerson, type Person } from '../modules/accounts/users.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, layout } from './layout.ts';
import { cookieName, type PageUser, pageUser, VIEW_COOKIE } from './session.ts';

/** Where the signed-in person is looking: one company, maybe one merchant account, live or test data. */
export interface DashboardView {
  user: PageUser;
  person: Person;
  memberships: MembershipSummary[];
  membership: MembershipSummary;
  tenantId: string;
  customerAccountId: string | null;
  /** The company's merchant accounts a company member may narrow to (empty for merchant members). */
  customerAccounts: CustomerAccount[];
  livemode: boolean;
  /** What the person may do here, as a TenantAccess for the services (the role's scopes). */
  access: TenantAccess;
  csrf: string;
}

export interface NavItem {
  href: string;
  label: string;
  /** Shown only where this holds (e.g. integrations for those who manage them). */
  visible?: (view: DashboardView) => boolean;
}

/** The dashboard's navigation, in order. Modules own the pages behind each link. */
export const dashboardNav: NavItem[] = [
  { href: '/dashboard/shipments', label: 'Shipments' },
  { href: '/dashboard/events', label: 'Events' },
  { href: '/dashboard/webhooks', label: 'Webhooks', visible: (v) => v.access.scopes.has('webhooks:write') },
  { href: '/dashboard/inbound', label: 'Inbound', visible: (v) => v.access.scopes.has('webhooks:write') },
  { href: '/dashboard/api-tokens', label: 'API tokens', visible: (v) => v.membership.manages_integrations },
  { href: '/dashboard/apps', label: 'Apps', visible: (v) => v.membership.manages_integrations },
  { href: '/dashboard/agents', label: 'Agents', visible: (v) => v.membership.manages_integrations },
  { href: '/dashboard/store', label: 'App Store' },
  { href: '/dashboard/members', label: 'Members' },
  {
    href: '/dashboard/privacy-requests',
    label: 'Privacy',
    visible: (v) => v.membership.role === 'owner' || v.membership.role === 'admin',
  },
  {
    href: '/dashboard/settings/branding',
    label: 'Branding',
    visible: (v) => v.membership.role === 'owner' || v.membership.role === 'admin',
  },
  { href: '/developer/apps', label: 'Developer' },
  { href: '/review', label: 'Review', visible: (v) => v.person.is_reviewer },
];

interface StoredView {
  tenantId?: string;
  customerAccountId?: string | null;
  livemode?: boolean;
}

function readStoredView(request: FastifyRequest): StoredView {
  try {
    const value: unknown = JSON.parse(request.cookies[VIEW_COOKIE] ?? '{}');
    return value && typeof value === 'object' ? (value as StoredView) : {};
  } catch {
    return {};
  }
}

export function storeView(ctx: AppContext, reply: FastifyReply, view: StoredView): void {
  reply.setCookie(cookieName(ctx, VIEW_COOKIE), JSON.stringify(view), {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.config.secureCookies,
  });
}

/** The signed-in person of a page, or a redirect to sign-in that comes back here afterwards. */
export async function requirePageUser(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<PageUser | null> {
  const user = await pageUser(ctx, request);
  if (!user) {
    await reply.redirect(`/signin?return_to=${encodeURIComponent(request.url)}`, 303);
    return null;
  }
  return user;
}

/** A page's work for the signed-in person, given the page's CSRF token. */
export type PageHandler<R extends RouteGenericInterface> = (
  userId: string,
  csrf: string,
  request: FastifyRequest<R>,
  reply: FastifyReply,
) => Promise<unknown>;

/**
 * A page for the signed-in person (a redirect to sign in otherwise). An AppError the handler throws
 * becomes the page `refused` sends, when it sends one (it answers undefined to let the error
 * through, to the error handler).
 */
export function signedInPage<R extends RouteGenericInterface>(
  ctx: AppContext,
  refused: (error: AppError, csrf: string, reply: FastifyReply) => FastifyReply | undefined,
  handler: PageHandler<R>,
) {
  return async (request: FastifyRequest<R>, reply: FastifyReply) => {
    const user = await requirePageUser(ctx, request, reply);
    if (!user) return reply;
    const csrf = reply.generateCsrf();
    try {
      return await handler(user.userId, csrf, request, reply);
    } catch (error) {
      const page = error instanceof AppError ? refused(error, csrf, reply) : undefined;
      if (page === undefined) throw error;
      return page;
    }
  };
}

/**
 * Resolves the dashboard view for a page request. Sends a redirect and answers null when the
 * person must sign in first, or has no company yet (to the page that creates one).
 */
export async function dashboardView(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<DashboardView | null> {
  const user = await requirePageUser(ctx, request, reply);
  if (!user) return null;
  const memberships = await membershipsOfPerson(ctx, user.userId);
  const stored = readStoredView(request);
  const membership = memberships.find((m) => m.tenant_id === stored.tenantId) ?? memberships[0];
  if (!membership) {
    await reply.redirect('/dashboard/companies/new', 303);
    return null;
  }
  const sameCompany = stored.tenantId === membership.tenant_id;
  // A merchant member always sees its own account; company members may narrow to one of theirs.
  const customerAccounts = membership.customer_account_id
    ? []
    : (await listCustomerAccounts(ctx, user.userId, membership.tenant_id, { limit: 100 })).data;
  const narrowedTo = sameCompany
    ? customerAccounts.find((account) => account.id === stored.customerAccountId)
    : undefined;
  const customerAccountId = membership.customer_account_id ?? narrowedTo?.id ?? null;
  const livemode =
    sameCompany && typeof stored.livemode === 'boolean' ? stored.livemode : membership.company_live;
  const person = await getPerson(ctx, user.userId);
  return {
    user,
    person,
    memberships,
    membership,
    tenantId: membership.tenant_id,
    customerAccountId,
    customerAccounts,
    livemode,
    access: {
      tenantId: membership.tenant_id,
      customerAccountId,
      livemode,
      scopes: scopesOfRole(membership.role),
      installationId: null,
      userId: user.userId,
      actor: user.userId,
    },
    csrf: reply.generateCsrf(),
  };
}

/** Company members of a company with merchant accounts may look at one account at a time. */
function accountSelect(view: DashboardView): SafeHtml | '' {
  if (view.customerAccounts.length === 0) return '';
  return html`<select name="account" aria-label="Merchant account">
<option value="">All merchant accounts</option>${view.customerAccounts.map(
    (a) =>
      html`<option value="${a.id}"${a.id === view.customerAccountId ? html` selected` : ''}>${a.name}</option>`,
  )}</select>`;
}

function navBar(view: DashboardView, current: string): SafeHtml {
  const items = dashboardNav.filter((item) => !item.visible || item.visible(view));
  return html`<nav aria-label="Main">${items.map(
    (item) =>
      html`<a href="${item.href}"${current.startsWith(item.href) ? html` aria-current="page"` : ''}>${item.label}</a>`,
  )}</nav>
<form class="inline switcher" method="get" action="/dashboard/switch">
<label class="sr-only" for="view-tenant">Company</label>
<select id="view-tenant" name="tenant" aria-label="Company">${view.memberships.map(
    (m) =>
      html`<option value="${m.tenant_id}"${m.tenant_id === view.tenantId ? html` selected` : ''}>${m.company_name}${
        m.customer_account_name ? ` · ${m.customer_account_name}` : ''
      }</option>`,
  )}</select>
${accountSelect(view)}<select name="mode" aria-label="Data">
<option value="live"${view.livemode ? html` selected` : ''}>Live data</option>
<option value="test"${view.livemode ? '' : html` selected`}>Test data</option>
</select>
<input type="hidden" name="return_to" value="${current}">
<button class="secondary" type="submit">Switch</button>
</form>
<form class="inline" method="post" action="/signout">${csrfField(view.csrf)}<button class="secondary" type="submit">Sign out</button></form>`;
}

/** Told on every dashboard page until the address is confirmed: what waits for it, and a new link. */
function unverifiedBanner(view: DashboardView): SafeHtml {
  return html`<div class="flash unverified" role="note"><p>Confirm your e-mail address ${view.person.email}: open the link we sent to it. Until then, joining a company by invitation, and the review console for App Store reviewers, wait for it.</p>
<form class="inline" method="post" action="/verify-email/resend">${csrfField(view.csrf)}<button class="secondary" type="submit">Send a new link</button></form></div>`;
}

/** A signed-in dashboard page: the shared frame with navigation and the company switcher. */
export function dashboardPage(
  view: DashboardView,
  options: { title: string; path: string; flash?: { kind: 'ok' | 'error'; message: string } | null },
  body: SafeHtml,
): SafeHtml {
  const banner = view.livemode
    ? ''
    : html`<p class="flash test-mode" role="note">Viewing test data: nothing here touches live shipments.</p>`;
  return layout(
    { title: options.title, nav: navBar(view, options.path), flash: options.flash ?? null },
    html`${banner}${view.person.email_verified ? '' : unverifiedBanner(view)}${body}`,
  );
}

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
import { csrfField, headerTools, layout, type PlaceGroup, type PlaceLink, placesNav } from './layout.ts';
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
 * Where a person with no company lands (CONTRACT.md, "The dashboard's manners"): a reviewer on
 * the review queue, a developer (someone with an app) on the developer portal, anyone else on the
 * page that creates a company.
 */
export async function homeWithoutCompany(ctx: AppContext, userId: string): Promise<string> {
  const person = await getPerson(ctx, userId);
  if (person.is_reviewer) return '/review';
  const app = await ctx.db
    .selectFrom('apps')
    .select('id')
    .where('developer_id', '=', userId)
    .limit(1)
    .executeTakeFirst();
  return app ? '/developer/apps' : '/dashboard/companies/new';
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
    await reply.redirect(await homeWithoutCompany(ctx, user.userId), 303);
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

function switchHref(tenant: string, current: string, extra: Record<string, string> = {}): string {
  const query = new URLSearchParams({ tenant, ...extra, return_to: current });
  return `/dashboard/switch?${query.toString()}`;
}

/**
 * The person's places: each company (the one in view with its pages and merchant accounts), the
 * developer portal, and the review console for reviewers. The same sidebar frames every page.
 */
export function dashboardPlaces(view: DashboardView, current: string): PlaceGroup[] {
  const items = dashboardNav
    .filter((item) => !item.visible || item.visible(view))
    .filter((item) => item.href.startsWith('/dashboard'));
  const accounts: PlaceLink[] = view.customerAccounts.length
    ? [
        {
          href: switchHref(view.tenantId, current, { account: '', mode: view.livemode ? 'live' : 'test' }),
          label: 'All merchant accounts',
          current: view.customerAccountId === null,
        },
        ...view.customerAccounts.map((a) => ({
          href: switchHref(view.tenantId, current, { account: a.id, mode: view.livemode ? 'live' : 'test' }),
          label: a.name,
          current: a.id === view.customerAccountId,
        })),
      ]
    : [];
  const companies: PlaceLink[] = view.memberships.map((m) =>
    m.tenant_id === view.tenantId
      ? {
          href: '/dashboard/shipments',
          label: `${m.company_name}${m.customer_account_name ? ` · ${m.customer_account_name}` : ''}`,
          children: items.map((item) => ({
            href: item.href,
            label: item.label,
            current: current.startsWith(item.href),
          })),
        }
      : { href: switchHref(m.tenant_id, '/dashboard/shipments'), label: m.company_name },
  );
  const groups: PlaceGroup[] = [{ heading: 'Companies', links: companies }];
  if (accounts.length) groups.push({ heading: 'Merchant account', links: accounts });
  groups.push(...personPlaces(view.person.is_reviewer, current));
  return groups;
}

/** The sidebar of a page outside a company's view (developer portal, review console). */
export function outsidePlaces(isReviewer: boolean, current: string): PlaceGroup[] {
  return [
    { heading: 'Companies', links: [{ href: '/dashboard', label: 'Your companies' }] },
    ...personPlaces(isReviewer, current),
  ];
}

/** The places of a person beyond companies: the developer portal, the review console. */
export function personPlaces(isReviewer: boolean, current: string): PlaceGroup[] {
  const groups: PlaceGroup[] = [
    {
      heading: 'Developer',
      links: [{ href: '/developer/apps', label: 'Your apps', current: current.startsWith('/developer') }],
    },
  ];
  if (isReviewer)
    groups.push({
      heading: 'Review',
      links: [{ href: '/review', label: 'Review queue', current: current.startsWith('/review') }],
    });
  return groups;
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
  // Company-wide pages (members, tokens, privacy) act on live data whatever the switch says.
  const banner = view.livemode
    ? ''
    : html`<p class="flash test-mode" role="note">Viewing test data: shipments, events and webhooks shown are test ones. Members, API tokens and privacy requests are the company's, live included.</p>`;
  const mode = {
    live: view.livemode,
    liveHref: switchHref(view.tenantId, options.path, {
      mode: 'live',
      account: view.customerAccountId ?? '',
    }),
    testHref: switchHref(view.tenantId, options.path, {
      mode: 'test',
      account: view.customerAccountId ?? '',
    }),
  };
  return layout(
    {
      title: options.title,
      nav: placesNav(dashboardPlaces(view, options.path)),
      tools: headerTools(view.csrf, mode),
      flash: options.flash ?? null,
    },
    html`${banner}${view.person.email_verified ? '' : unverifiedBanner(view)}${body}`,
  );
}

import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { createCompany, membershipsOfPerson } from '../../modules/accounts/companies.ts';
import { getPerson } from '../../modules/accounts/users.ts';
import { outsidePlaces, requirePageUser, storeView } from '../dashboard.ts';
import { html } from '../html.ts';
import { csrfField, headerTools, layout, placesNav, sendPage } from '../layout.ts';
import { sameSiteReturnPath } from '../session.ts';
import { type Form, redirectWithFlash, requiredField } from './common.ts';

type SwitchQuery = { tenant?: string; mode?: string; account?: string; return_to?: string };

function newCompanyPage(csrf: string, isReviewer: boolean, error?: string) {
  const nav = placesNav(outsidePlaces(isReviewer, '/dashboard/companies/new'));
  return layout(
    {
      title: 'New company',
      nav,
      tools: headerTools(csrf),
      flash: error ? { kind: 'error', message: error } : null,
    },
    html`<section class="card narrow">
<h1>Create a company</h1>
<p class="muted">A company holds your shipments, merchant accounts, members and API tokens. It starts with test data; go live when you are ready.</p>
<form class="stack" method="post" action="/dashboard/companies">
${csrfField(csrf)}
<label>Company name <input name="name" required maxlength="200" autocomplete="organization"></label>
<button type="submit">Create company</button>
</form>
<p class="muted">Building an app for Waybill companies? <a href="/developer/apps">Go to the developer portal</a>; no company needed.</p>
</section>`,
  );
}

/** The dashboard's entry, its view switcher, and the first-company page. */
export function shellPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/dashboard', { schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/dashboard/shipments', 303),
  );

  app.get<{ Querystring: SwitchQuery }>(
    '/dashboard/switch',
    { schema: { hide: true } },
    async (request, reply) => {
      const user = await requirePageUser(ctx, request, reply);
      if (!user) return reply;
      const query = request.query;
      const memberships = await membershipsOfPerson(ctx, user.userId);
      // Only a company the person belongs to; any other id is as unknown as a made-up one.
      const membership = memberships.find((m) => m.tenant_id === query.tenant);
      if (!membership) throw new AppError('company.not_found');
      const livemode = query.mode === 'live' ? true : query.mode === 'test' ? false : membership.company_live;
      // The dashboard view re-checks the account against the company's own on every page.
      const account = membership.customer_account_id ? null : query.account?.slice(0, 64) || null;
      storeView(ctx, reply, { tenantId: membership.tenant_id, customerAccountId: account, livemode });
      return reply.redirect(sameSiteReturnPath(ctx.config.webUrl, query.return_to), 303);
    },
  );

  app.get('/dashboard/companies/new', { schema: { hide: true } }, async (request, reply) => {
    const user = await requirePageUser(ctx, request, reply);
    if (!user) return reply;
    const person = await getPerson(ctx, user.userId);
    return sendPage(reply, newCompanyPage(reply.generateCsrf(), person.is_reviewer));
  });

  app.post<{ Body: Form }>(
    '/dashboard/companies',
    { schema: { hide: true }, preValidation: app.csrfProtection },
    async (request, reply) => {
      const user = await requirePageUser(ctx, request, reply);
      if (!user) return reply;
      try {
        const name = requiredField(request.body ?? {}, 'name', 'Company name', 200);
        const company = await createCompany(ctx, user.userId, { name });
        storeView(ctx, reply, { tenantId: company.id, customerAccountId: null, livemode: company.live });
        return redirectWithFlash(ctx, reply, '/dashboard/shipments', `${company.name} is ready.`);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        const person = await getPerson(ctx, user.userId);
        return sendPage(
          reply,
          newCompanyPage(reply.generateCsrf(), person.is_reviewer, error.message),
          error.status,
        );
      }
    },
  );
}

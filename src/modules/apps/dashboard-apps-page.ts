import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { type DashboardView, dashboardPage, dashboardView } from '../../web/dashboard.ts';
import { takeFlash } from '../../web/flash.ts';
import { html } from '../../web/html.ts';
import { sendPage } from '../../web/layout.ts';
import { redirectWithFlash } from '../../web/pages/common.ts';
import { confirmationBody, confirmLink } from '../../web/pages/confirm.ts';
import { scopeList } from './install-page.ts';
import {
  type Installation,
  listInstallations,
  MAX_UNINSTALL_REASON,
  UNINSTALL_REASONS,
  uninstallAsPerson,
  uninstallReason,
} from './installations.ts';

const PATH = '/dashboard/apps';

async function accountNames(ctx: AppContext, tenantId: string): Promise<Map<string, string>> {
  const rows = await ctx.db
    .selectFrom('customer_accounts')
    .select(['id', 'name'])
    .where('tenant_id', '=', tenantId)
    .execute();
  return new Map(rows.map((row) => [row.id, row.name]));
}

/** Uninstalling asks, without insisting, why: the app's developer reads the answer, nobody else. */
function reasonInputs(inst: Installation) {
  const choices = Object.entries(UNINSTALL_REASONS).map(
    ([value, label]) => html`<option value="${value}">${label}</option>`,
  );
  return html`<label>Why are you uninstalling ${inst.app_name}? (optional; only its developer sees it)
<select name="reason"><option value="">Rather not say</option>${choices}</select></label>
<label>Anything to add? <textarea name="reason_text" rows="2" maxlength="${MAX_UNINSTALL_REASON}"></textarea></label>`;
}

function installedApps(installations: Installation[], accounts: Map<string, string>) {
  const rows = installations.map(
    (inst) => html`<tr>
<td>${inst.app_name}${inst.app_status === 'suspended' ? html` <span class="badge bad">suspended: its access and events are stopped</span>` : ''}${inst.held_reason === 'needs_approval' ? html` <span class="badge bad" data-held-reason="needs_approval">needs approving again: the person who approved it left or lost the role; its endpoints receive nothing until then</span>` : ''}</td>
<td>${inst.customer_account_id ? (accounts.get(inst.customer_account_id) ?? inst.customer_account_id) : 'Whole company'}</td>
<td>${scopeList(inst.scopes)}</td>
<td>${inst.updated_at.slice(0, 10)}</td>
<td>${confirmLink(`${PATH}/${encodeURIComponent(inst.id)}/uninstall`, `Uninstall ${inst.app_name}`)}</td>
</tr>`,
  );
  return html`<h1>Installed apps</h1>
<p class="muted">Uninstalling an app ends all of its tokens at once and deletes the webhook endpoints it created.</p>
${
  installations.length > 0
    ? html`<div class="table-wrap"><table><thead><tr><th>App</th><th>Account</th><th>Granted scopes</th><th>Approved</th><th><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="muted">No apps are installed.</p>`
}`;
}

function onlyManagers(view: DashboardView, reply: FastifyReply) {
  const body = html`<h1>Installed apps</h1><p>Only owners, admins and merchant admins manage apps.</p>`;
  return sendPage(reply, dashboardPage(view, { title: 'Apps', path: PATH }, body), 403);
}

/** The dashboard's Apps page: installed apps with what they were granted, and an uninstall button. */
export function dashboardAppsPage(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get(PATH, { schema: { hide: true } }, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      if (!view.membership.manages_integrations) return onlyManagers(view, reply);
      const flash = await takeFlash(ctx, request, reply);
      const page = await listInstallations(ctx, view.user.userId, view.tenantId, { limit: 100 });
      const body = installedApps(page.data, await accountNames(ctx, view.tenantId));
      return sendPage(reply, dashboardPage(view, { title: 'Apps', path: PATH, flash }, body));
    });

    // The second question (CONTRACT.md, "The dashboard's manners"): a page of its own, by GET,
    // naming the app and what goes with it, and asking (without insisting) why; it changes nothing.
    app.get<{ Params: { id: string } }>(
      `${PATH}/:id/uninstall`,
      { schema: { hide: true } },
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        if (!view.membership.manages_integrations) return onlyManagers(view, reply);
        const installs = await listInstallations(ctx, view.user.userId, view.tenantId, { limit: 100 });
        const inst = installs.data.find((i) => i.id === request.params.id);
        if (!inst) throw new AppError('installation.not_found');
        const flash = await takeFlash(ctx, request, reply);
        const question = `Uninstall ${inst.app_name}?`;
        const body = confirmationBody(view.csrf, {
          question,
          lost: [
            `${inst.app_name} loses its access at once: its tokens are refused.`,
            'Its webhook endpoints here are deleted and receive nothing more.',
            'Installing it again asks for your approval again.',
          ],
          action: `${PATH}/${encodeURIComponent(inst.id)}/uninstall`,
          confirm: `Uninstall ${inst.app_name}`,
          back: PATH,
          inputs: reasonInputs(inst),
        });
        return sendPage(reply, dashboardPage(view, { title: question, path: PATH, flash }, body));
      },
    );

    app.post<{ Params: { id: string }; Body: Record<string, string | string[] | undefined> | undefined }>(
      `${PATH}/:id/uninstall`,
      { schema: { hide: true }, preValidation: app.csrfProtection },
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        try {
          const form = request.body ?? {};
          const field = (name: string) => {
            const value = form[name];
            return Array.isArray(value) ? value[0] : value;
          };
          // Only the question's own form confirms; anything else is sent to the question.
          if (field('confirmed') !== 'yes')
            return reply.redirect(`${PATH}/${encodeURIComponent(request.params.id)}/uninstall`, 303);
          const reason = uninstallReason(field('reason') || undefined, field('reason_text'));
          const installs = await listInstallations(ctx, view.user.userId, view.tenantId, { limit: 100 });
          const name = installs.data.find((i) => i.id === request.params.id)?.app_name ?? 'The app';
          await uninstallAsPerson(ctx, view.user.userId, view.tenantId, request.params.id, reason);
          return redirectWithFlash(ctx, reply, PATH, `${name} was uninstalled.`);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          const body = html`<h1>Installed apps</h1><p>${error.message}</p><p><a href="${PATH}">Back</a></p>`;
          return sendPage(reply, dashboardPage(view, { title: 'Apps', path: PATH }, body), error.status);
        }
      },
    );
  };
}

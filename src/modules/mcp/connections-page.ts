import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { dashboardPage, dashboardView } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { sendPage } from '../../web/layout.ts';
import { confirmationBody } from '../../web/pages/confirm.ts';
import { timeTag } from '../../web/time.ts';
import { type AgentConnection, listAgentConnections, revokeAgentConnection } from './connections.ts';

const PATH = '/dashboard/agents';

function connectionRow(c: AgentConnection, now: Date) {
  return html`<tr>
<td>${c.client_name}${c.self_described ? html` <span class="badge warning" title="It registered itself: its name is its own claim, checked by no one">Self-described</span>` : ''}<br><span class="muted">${c.kind === 'api_token' ? 'API token for agents' : c.self_described ? `returns to ${c.client_host ?? 'an app on the device'}` : (c.client_host ?? c.client_id)}</span></td>
<td>${c.mode === 'live' ? html`<span class="badge bad">live data</span>` : html`<span class="badge">test data</span>`}</td>
<td>${c.customer_account_id ?? 'Whole company'}</td>
<td>${c.scopes.join(', ')}</td>
<td>${c.last_used_at ? timeTag(c.last_used_at, now) : 'never'}</td>
<td><a class="button danger" href="${PATH}/${c.id}/revoke" aria-label="Revoke ${c.client_name}">Revoke</a></td>
</tr>`;
}

/** The dashboard's Agents page: the AI agents connected through /mcp, each with a revoke button. */
export function agentConnectionsPage(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Querystring: { revoked?: string } }>(
      PATH,
      { schema: { hide: true } },
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const flash = request.query.revoked
          ? { kind: 'ok' as const, message: 'The agent was disconnected.' }
          : null;
        if (!view.membership.manages_integrations) {
          const body = html`<h1>AI agents</h1><p>Only owners, admins and merchant admins manage agents.</p>`;
          return sendPage(reply, dashboardPage(view, { title: 'Agents', path: PATH }, body), 403);
        }
        const page = await listAgentConnections(ctx, view.user.userId, view.tenantId, { limit: 100 });
        const body = html`<h1>AI agents</h1>
<p class="muted">Agents (assistants, IDEs) connect at <code>${ctx.config.baseUrl}/mcp</code>. Revoking one stops every token it holds at once.</p>
${
  page.data.length > 0
    ? html`<div class="table-wrap"><table><thead><tr><th>Agent</th><th>Mode</th><th>Account</th><th>Scopes</th><th>Last used</th><th><span class="sr-only">Actions</span></th></tr></thead><tbody>${page.data.map((c) => connectionRow(c, ctx.clock.now()))}</tbody></table></div>`
    : html`<p class="muted">No agents are connected.</p>`
}`;
        return sendPage(reply, dashboardPage(view, { title: 'Agents', path: PATH, flash }, body));
      },
    );

    // The second question (decision 0083): a page that names the agent and changes nothing.
    app.get<{ Params: { id: string } }>(
      `${PATH}/:id/revoke`,
      { schema: { hide: true } },
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        const page = await listAgentConnections(ctx, view.user.userId, view.tenantId, { limit: 100 });
        const c = page.data.find((item) => item.id === request.params.id);
        if (!c) throw new AppError('agent_connection.not_found');
        const body = confirmationBody(view.csrf, {
          question: `Disconnect ${c.client_name}?`,
          lost: [
            `Every token it holds stops working at once: its next call to ${ctx.config.baseUrl}/mcp answers 401.`,
            `It had ${c.mode} data${c.customer_account_id ? ` of merchant account ${c.customer_account_id}` : ' of the whole company'}, with ${c.scopes.join(', ')}.`,
            'To use it again, connect it again (a person signs it in anew).',
          ],
          action: `${PATH}/${encodeURIComponent(c.id)}/revoke`,
          confirm: 'Disconnect agent',
          back: PATH,
        });
        return sendPage(
          reply,
          dashboardPage(view, { title: `Disconnect ${c.client_name}`, path: PATH }, body),
        );
      },
    );

    app.post<{ Params: { id: string }; Body: Record<string, string | undefined> }>(
      `${PATH}/:id/revoke`,
      { schema: { hide: true }, preValidation: app.csrfProtection },
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        // Only the question's own form confirms; anything else is sent to the question.
        if (request.body?.confirmed !== 'yes')
          return reply.redirect(`${PATH}/${encodeURIComponent(request.params.id)}/revoke`, 303);
        try {
          await revokeAgentConnection(ctx, view.user.userId, view.tenantId, request.params.id);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          const body = html`<h1>AI agents</h1><p>${error.message}</p><p><a href="${PATH}">Back</a></p>`;
          return sendPage(reply, dashboardPage(view, { title: 'Agents', path: PATH }, body), error.status);
        }
        return reply.redirect(`${PATH}?revoked=1`, 303);
      },
    );
  };
}

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { requirePageUser } from '../../web/dashboard.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { csrfField, sendPage } from '../../web/layout.ts';
import { timeTag } from '../../web/time.ts';
import { portalPage } from '../apps/portal-views.ts';
import { getApp } from '../apps/service.ts';
import { printable } from '../webhooks/pages-views.ts';

import { type EventMessage, listEventMessages, replayEventMessage, sendTestAppEvent } from './messages.ts';

type Route = {
  Params: { id: string; delivery_id?: string };
  Querystring: { done?: string; cursor?: string };
};

const DONE: Record<string, string> = {
  replayed: 'Sent again: the new attempt is listed below.',
  tested: 'Test app.uninstalled sent: its attempt is listed below.',
};

function attemptsOf(message: EventMessage): SafeHtml {
  if (message.attempts.length === 0) return html`<span class="muted">not attempted yet</span>`;
  const rows = message.attempts.map(
    (a) => html`<li>${timeTag(a.attempted_at)} · ${a.duration_ms} ms · ${a.status_code ?? a.error ?? '—'}
${a.response_body ? html`<pre>${printable(a.response_body)}</pre>` : ''}</li>`,
  );
  return html`<ul class="attempts">${rows}</ul>`;
}

function messagesPage(
  csrf: string,
  app: { id: string; name: string; events_url: string | null },
  messages: EventMessage[],
  nextCursor: string | null,
  flash: string | null,
): SafeHtml {
  const rows = messages.map(
    (
      m,
    ) => html`<tr data-status="${m.status}"><td>${m.event_type}${m.test ? html` <span class="badge">test</span>` : ''}</td>
<td class="secret">${m.test ? 'no company (test)' : m.tenant_id}</td><td><span class="badge">${m.status}</span></td>
<td>${attemptsOf(m)}</td>
<td><form class="inline" method="post" action="/developer/apps/${app.id}/event-messages/${m.id}/replay">${csrfField(csrf)}
<button class="secondary" type="submit">Replay</button></form></td></tr>`,
  );
  return portalPage(
    { csrf, flash: flash ? { kind: 'ok', message: flash } : null },
    `${app.name}: app events`,
    html`<h1>App events of ${app.name}</h1>
<p>Events URL: ${app.events_url ? html`<code>${app.events_url}</code>` : html`<span class="muted">not set</span>`}.
Messages are signed with the events secret and retried for about three days.</p>
<form class="inline" method="post" action="/developer/apps/${app.id}/event-messages/test">${csrfField(csrf)}
<button type="submit">Send a test app.uninstalled</button></form>
${
  messages.length > 0
    ? html`<div class="table-wrap"><table><thead><tr><th>Type</th><th>Company</th><th>Status</th><th>Attempts</th><th><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="muted">No app event has been sent yet.</p>`
}
${nextCursor ? html`<p class="pager"><a class="button secondary" rel="next" href="/developer/apps/${app.id}/event-messages?cursor=${nextCursor}">Older</a></p>` : ''}
<p><a href="/developer/apps/${app.id}">Back to the app</a></p>`,
  );
}

/** The portal's app-event messages page (spec 6.6): latest messages, attempts, replay, test. */
export function appEventPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const hide = { schema: { hide: true } };
    const post = { ...hide, preValidation: app.csrfProtection };

    const show = async (request: FastifyRequest<Route>, reply: FastifyReply) => {
      const user = await requirePageUser(ctx, request, reply);
      if (!user) return reply;
      const csrf = reply.generateCsrf();
      try {
        const found = await getApp(ctx, user.userId, request.params.id);
        const page = await listEventMessages(ctx, user.userId, found.id, {
          limit: 50,
          ...(request.query.cursor ? { cursor: request.query.cursor } : {}),
        });
        const flash = DONE[request.query.done ?? ''] ?? null;
        return sendPage(reply, messagesPage(csrf, found, page.data, page.next_cursor, flash));
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error;
        return sendPage(
          reply,
          portalPage({ csrf }, 'Not found', html`<h1>${error.message}</h1>`),
          error.status,
        );
      }
    };

    const act =
      (run: (userId: string, request: FastifyRequest<Route>) => Promise<unknown>, done: string) =>
      async (request: FastifyRequest<Route>, reply: FastifyReply) => {
        const user = await requirePageUser(ctx, request, reply);
        if (!user) return reply;
        try {
          await run(user.userId, request);
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          const csrf = reply.generateCsrf();
          return sendPage(
            reply,
            portalPage({ csrf }, 'Not done', html`<h1>${error.message}</h1>`),
            error.status,
          );
        }
        return reply.redirect(
          `/developer/apps/${encodeURIComponent(request.params.id)}/event-messages?done=${done}`,
          303,
        );
      };

    app.get<Route>('/developer/apps/:id/event-messages', hide, show);
    app.post<Route>(
      '/developer/apps/:id/event-messages/:delivery_id/replay',
      post,
      act(
        (userId, request) =>
          replayEventMessage(ctx, userId, request.params.id, request.params.delivery_id ?? ''),
        'replayed',
      ),
    );
    app.post<Route>(
      '/developer/apps/:id/event-messages/test',
      post,
      act((userId, request) => sendTestAppEvent(ctx, userId, request.params.id), 'tested'),
    );
  };
}

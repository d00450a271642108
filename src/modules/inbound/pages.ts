import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import type { AppContext } from '../../context.ts';
import { type FieldError as ApiFieldError, AppError } from '../../lib/errors.ts';
import type { Page } from '../../lib/paging.ts';
import { type DashboardView, dashboardPage, dashboardView } from '../../web/dashboard.ts';
import { type FieldError, fieldErrorsOf, fieldMessage, invalidAttrs, typedValue } from '../../web/fields.ts';
import { leaveFlash, takeFlash } from '../../web/flash.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { csrfField, sendPage } from '../../web/layout.ts';
import { redirectWithFlash } from '../../web/pages/common.ts';
import { timeTag } from '../../web/time.ts';
import { type InboundMessage, listMessages } from './messages.ts';
import { createSource, getSource, type InboundSource, listSources } from './sources.ts';

type Form = Record<string, string | string[] | undefined>;
const LIST = '/dashboard/inbound';
const hidden = { schema: { hide: true } };

function text(form: Form, name: string): string {
  const value = form[name];
  return (Array.isArray(value) ? value[0] : value)?.slice(0, 200) ?? '';
}

function problemText(error: unknown): { message: string; status: number } {
  if (!(error instanceof AppError)) throw error;
  const fields = Array.isArray(error.extra.errors) ? (error.extra.errors as ApiFieldError[]) : [];
  const details = fields.map((f) => `${f.path.replace(/^\//, '')} ${f.message}`).join('; ');
  return { message: details ? `${error.message}: ${details}` : error.message, status: error.status };
}

function sourceList(
  sources: Page<InboundSource>,
  livemode: boolean,
  csrf: string,
  now: Date,
  form = { name: '', carrier_code: '' },
  errors: FieldError[] = [],
): SafeHtml {
  const rows = sources.data.map(
    (s) => html`<tr>
<td><a href="${LIST}/${s.id}">${s.name}</a></td>
<td><code>${s.carrier_code}</code></td>
<td><code>${s.url}</code></td>
<td>${timeTag(s.created_at, now)}</td>
</tr>`,
  );
  return html`<h1>Inbound sources</h1>
<p class="muted">Carriers and partners that send checkpoints of your ${livemode ? 'live' : 'test'} shipments, signed with Standard Webhooks.</p>
${
  sources.data.length === 0
    ? html`<p class="card muted">No ${livemode ? 'live' : 'test'} inbound sources yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th>Name</th><th>Carrier</th><th>URL</th><th>Created</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
}
${sources.next_cursor ? html`<p><a href="${LIST}?cursor=${sources.next_cursor}">More</a></p>` : ''}
<section class="card" aria-label="Add a source">
<h2>Add a source</h2>
<form method="post" action="${LIST}">
${csrfField(csrf)}
<p><label for="name">Name</label><br><input id="name" name="name" required maxlength="100" value="${form.name}"${invalidAttrs(errors, 'name')}>${fieldMessage(errors, 'name')}</p>
<p><label for="carrier_code">Carrier code</label><br><input id="carrier_code" name="carrier_code" required maxlength="32" pattern="[a-z0-9\\-]{2,32}" value="${form.carrier_code}"${invalidAttrs(errors, 'carrier_code')}>${fieldMessage(errors, 'carrier_code')}</p>
<p><button type="submit">Add source</button></p>
</form>
</section>`;
}

function messageRows(messages: Page<InboundMessage>, now: Date): SafeHtml {
  if (messages.data.length === 0) return html`<p class="card muted">No message received yet.</p>`;
  const rows = messages.data.map((m) => {
    const counts = new Map<string, number>();
    for (const r of m.results) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
    const outcomes = [...counts].map(([outcome, n]) => `${n} ${outcome.replace('_', ' ')}`).join(', ');
    return html`<tr>
<td>${timeTag(m.received_at, now)}</td>
<td><code>${m.webhook_id ?? '—'}</code></td>
<td>${m.status.replace('_', ' ')}</td>
<td>${outcomes || '—'}</td>
<td>${m.reason ?? ''}</td>
</tr>`;
  });
  return html`<div class="table-wrap"><table>
<thead><tr><th>Received</th><th>Webhook id</th><th>Status</th><th>Checkpoints</th><th>Reason</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

function sourcePage(source: InboundSource, messages: Page<InboundMessage>, now: Date): SafeHtml {
  return html`<p><a href="${LIST}">Inbound sources</a></p>
<h1>${source.name}</h1>
<p>Carrier <code>${source.carrier_code}</code>; ${source.mode} shipments${source.customer_account_id ? html` of merchant account <code>${source.customer_account_id}</code>` : ''}.</p>
<p>Your carrier POSTs signed batches to <code data-copy="source URL">${source.url}</code>.</p>
<h2>Inbound log</h2>
${messageRows(messages, now)}
${messages.next_cursor ? html`<p><a href="${LIST}/${source.id}?cursor=${messages.next_cursor}">More</a></p>` : ''}`;
}

/** The dashboard's inbound pages: the sources and each one's log (CSRF on the form). */
export function inboundPages(ctx: AppContext): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    const guarded = { ...hidden, preValidation: app.csrfProtection };

    function failed(view: DashboardView, reply: FastifyReply, error: unknown) {
      const { message, status } = problemText(error);
      const body = html`<h1>Not found</h1><p>${message}</p><p><a href="${LIST}">Back to inbound sources</a></p>`;
      return sendPage(reply, dashboardPage(view, { title: 'Not found', path: LIST }, body), status);
    }

    app.get<{ Querystring: { cursor?: string } }>(LIST, hidden, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      try {
        const sources = await listSources(ctx, view.access, { limit: 20, cursor: request.query.cursor });
        const flash = await takeFlash(ctx, request, reply);
        const retry = flash?.form?.path === LIST ? flash.form : null;
        const typed = {
          name: typedValue(retry?.values, 'name'),
          carrier_code: typedValue(retry?.values, 'carrier_code'),
        };
        const body = sourceList(
          sources,
          view.livemode,
          view.csrf,
          ctx.clock.now(),
          typed,
          retry?.errors ?? [],
        );
        return sendPage(reply, dashboardPage(view, { title: 'Inbound sources', path: LIST, flash }, body));
      } catch (error) {
        return failed(view, reply, error);
      }
    });

    // 303 either way (a reload repeats nothing): to the new source's page with its secret in the
    // one-time flash, or back to the form as typed with each error beside its field (decision 0083).
    app.post<{ Body: Form }>(LIST, guarded, async (request, reply) => {
      const view = await dashboardView(ctx, request, reply);
      if (!view) return reply;
      const form = {
        name: text(request.body ?? {}, 'name'),
        carrier_code: text(request.body ?? {}, 'carrier_code'),
      };
      try {
        const created = await createSource(ctx, view.access, form);
        return redirectWithFlash(ctx, reply, `${LIST}/${created.id}`, 'Source added.', {
          secrets: [{ label: 'Signing secret', value: created.secret, name: 'secret' }],
          note: 'Give it to your carrier now: it is not shown again (rotate it through the API to get a new one).',
        });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        const errors = fieldErrorsOf(error, { labels: { name: 'Name', carrier_code: 'Carrier code' } });
        await leaveFlash(ctx, reply, {
          kind: 'error',
          message: errors.length
            ? 'The source was not added: see the form below.'
            : problemText(error).message,
          form: { path: LIST, values: form, errors },
        });
        return reply.redirect(LIST, 303);
      }
    });

    app.get<{ Params: { id: string }; Querystring: { cursor?: string } }>(
      `${LIST}/:id`,
      hidden,
      async (request, reply) => {
        const view = await dashboardView(ctx, request, reply);
        if (!view) return reply;
        try {
          const source = await getSource(ctx, view.access, request.params.id);
          const messages = await listMessages(ctx, view.access, source.id, {
            limit: 20,
            cursor: request.query.cursor,
          });
          const flash = await takeFlash(ctx, request, reply);
          return sendPage(
            reply,
            dashboardPage(
              view,
              { title: source.name, path: LIST, flash },
              sourcePage(source, messages, ctx.clock.now()),
            ),
          );
        } catch (error) {
          return failed(view, reply, error);
        }
      },
    );
  };
}

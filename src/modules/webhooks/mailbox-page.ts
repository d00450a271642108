import type { FastifyPluginAsync } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { requirePageUser } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { layout, sendPage } from '../../web/layout.ts';
import { VERIFICATION_SUBJECT } from '../accounts/email-verification.ts';

/**
 * The development mailbox: without WAYBILL_SMTP_URL, e-mail stays in the outbox table and the
 * signed-in person reads what was addressed to them here (and only that).
 */
export function mailboxPage(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/dev/mailbox', { schema: { hide: true } }, async (request, reply) => {
      const user = await requirePageUser(ctx, request, reply);
      if (!user) return reply;
      const person = await ctx.db
        .selectFrom('users')
        .select('email')
        .where('id', '=', user.userId)
        .executeTakeFirstOrThrow();
      let query = ctx.db
        .selectFrom('mail_outbox')
        .select(['id', 'subject', 'body', 'created_at', 'sent_at'])
        .where(sql<boolean>`recipients @> jsonb_build_array(${person.email}::text)`);
      // A verification link shown to the account it verifies would prove nothing: whoever signed up
      // with the address reads it. Only the demo (a development setup) shows them here; elsewhere
      // they reach the address's owner over SMTP only.
      if (!ctx.config.demo) query = query.where('subject', '!=', VERIFICATION_SUBJECT);
      const mails = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(50).execute();
      const items = mails.map(
        (mail) => html`<article class="card">
<h2>${mail.subject}</h2>
<p class="muted">${new Date(mail.created_at).toISOString()}${mail.sent_at ? ' · sent over SMTP' : ''}</p>
<pre>${mail.body}</pre>
</article>`,
      );
      return sendPage(
        reply,
        layout(
          { title: 'Mailbox' },
          html`<h1>Mailbox of ${person.email}</h1>
${mails.length === 0 ? html`<p class="muted">No e-mail yet.</p>` : items}`,
        ),
      );
    });
  };
}

import type { FastifyPluginAsync } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { isDemoAddress } from '../../lib/demo.ts';
import { requirePageUser } from '../../web/dashboard.ts';
import { html } from '../../web/html.ts';
import { layout, sendPage } from '../../web/layout.ts';
import { VERIFICATION_SUBJECT } from './email-verification.ts';
import { normalizeEmail } from './users.ts';

/** A link that proves, or grants, something by its secret: a verification link's `token=` and the like. */
const SECRET_LINK = /https?:\/\/[^\s]*[?&#](?:token|code|key|secret|invitation)=[^\s]*/gi;
const WITHHELD = '[link withheld: it is sent only to the address itself]';

/**
 * Whether the mailbox may show an address's links (CONTRACT.md, e-mail verification): only the
 * demo's own addresses, with the demo on. Anyone can sign up with any address, so a link shown to
 * the account that claims an address proves nothing about it: an address on the reviewer list, a
 * colleague's address an owner invites, is verified by mail that reaches it, never through a page.
 */
export function mailboxShowsLinks(ctx: AppContext, email: string): boolean {
  return ctx.config.demo && isDemoAddress(email) && !ctx.config.reviewerEmails.has(normalizeEmail(email));
}

/**
 * The development mailbox: without WAYBILL_SMTP_URL, e-mail stays in the outbox table and the
 * signed-in person reads what was addressed to them here (and only that); links that carry a
 * secret only for the demo's own addresses (mailboxShowsLinks).
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
      const showsLinks = mailboxShowsLinks(ctx, person.email);
      if (!showsLinks) query = query.where('subject', '!=', VERIFICATION_SUBJECT);
      const mails = (await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(50).execute()).map(
        // Every other mail keeps its text, without any link that carries a secret.
        (mail) => (showsLinks ? mail : { ...mail, body: mail.body.replace(SECRET_LINK, WITHHELD) }),
      );
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

import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.ts';
import { AppError } from '../lib/errors.ts';
import {
  resendVerificationLink,
  verificationLinkFor,
  verifyEmail,
} from '../modules/accounts/email-verification.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, layout, sendPage } from './layout.ts';
import { pageUser } from './session.ts';

type Form = Record<string, string | undefined>;

const card = (
  title: string,
  body: SafeHtml,
  flash: { kind: 'ok' | 'error'; message: string } | null = null,
) => layout({ title, flash }, html`<section class="card narrow"><h1>${title}</h1>${body}</section>`);

const deadLink = () =>
  card(
    'This link does not work',
    html`<p>The link is unknown, used already or older than 24 hours. Sign in and ask for a new one on the dashboard.</p>
<p><a class="button" href="/dashboard">Go to the dashboard</a></p>`,
  );

/**
 * The page a verification link opens (CONTRACT.md: `{web_url}/verify-email?token=...`). Opening it
 * only shows a button, so that a mail scanner that fetches links does not spend it; pressing the
 * button verifies. Works signed in or out: the token is what proves the address.
 */
export function verifyEmailPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Querystring: { token?: string } }>(
      '/verify-email',
      { schema: { hide: true } },
      async (request, reply) => {
        const token = typeof request.query.token === 'string' ? request.query.token : '';
        const link = token ? await verificationLinkFor(ctx, token) : null;
        if (!link) return sendPage(reply, deadLink(), 400);
        return sendPage(
          reply,
          card(
            'Confirm your e-mail address',
            html`<p>Press the button to confirm that <strong>${link.email}</strong> is your address.</p>
<form class="stack" method="post" action="/verify-email">
${csrfField(reply.generateCsrf())}
<input type="hidden" name="token" value="${token}">
<button type="submit">Confirm ${link.email}</button>
</form>`,
          ),
        );
      },
    );

    app.post<{ Body: Form }>(
      '/verify-email',
      { schema: { hide: true }, preValidation: app.csrfProtection },
      async (request, reply) => {
        const token = String(request.body?.token ?? '');
        try {
          const { email } = await verifyEmail(ctx, token);
          return sendPage(
            reply,
            card(
              'E-mail address confirmed',
              html`<p>Thank you: ${email} is confirmed.</p><p><a class="button" href="/dashboard">Go to the dashboard</a></p>`,
            ),
          );
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          return sendPage(reply, deadLink(), error.status);
        }
      },
    );

    app.post<{ Body: Form }>(
      '/verify-email/resend',
      { schema: { hide: true }, preValidation: app.csrfProtection },
      async (request, reply) => {
        const user = await pageUser(ctx, request);
        if (!user) return reply.redirect('/signin?return_to=%2Fdashboard', 303);
        const back = html`<p><a class="button secondary" href="/dashboard">Back to the dashboard</a></p>`;
        try {
          const sent = await resendVerificationLink(ctx, user.userId);
          return sendPage(
            reply,
            card(
              'Link sent',
              html`<p>We sent a new link to ${sent.email}. It works once, for 24 hours.</p>${back}`,
            ),
          );
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          if (typeof error.extra.retry_after === 'number')
            reply.header('retry-after', String(error.extra.retry_after));
          return sendPage(
            reply,
            card('No new link', back, { kind: 'error', message: error.message }),
            error.status,
          );
        }
      },
    );
  };
}

import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.ts';
import { signInRateLimit, signUpRateLimit } from '../http/rate-limits.ts';
import { AppError } from '../lib/errors.ts';
import { signIn, signOut, signUp } from '../modules/accounts/users.ts';
import { html } from './html.ts';
import { csrfField, layout, sendPage } from './layout.ts';
import { dashboardPages } from './pages/index.ts';
import {
  clearSessionCookie,
  pageUser,
  sameSiteReturnPath,
  setDeviceCookie,
  setSessionCookie,
  signInSource,
} from './session.ts';
import { verifyEmailPages } from './verify-email.ts';

const stylesheet = readFileSync(new URL('./static/waybill.css', import.meta.url), 'utf8');
const localTime = readFileSync(new URL('./static/local-time.js', import.meta.url), 'utf8');
const copyScript = readFileSync(new URL('./static/copy.js', import.meta.url), 'utf8');
const favicon = readFileSync(new URL('./static/favicon.svg', import.meta.url), 'utf8');

type Form = Record<string, string | undefined>;

function signInPage(csrf: string, returnTo: string, error?: string) {
  return layout(
    { title: 'Sign in', flash: error ? { kind: 'error', message: error } : null },
    html`<section class="card narrow">
<h1>Sign in</h1>
<form class="stack" method="post" action="/signin">
${csrfField(csrf)}
<input type="hidden" name="return_to" value="${returnTo}">
<label>E-mail <input type="email" name="email" autocomplete="username" required maxlength="254"></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required maxlength="200"></label>
<button type="submit">Sign in</button>
</form>
<p class="muted">New here? <a href="/signup?return_to=${encodeURIComponent(returnTo)}">Create an account</a></p>
</section>`,
  );
}

function signUpPage(csrf: string, returnTo: string, error?: string) {
  return layout(
    { title: 'Sign up', flash: error ? { kind: 'error', message: error } : null },
    html`<section class="card narrow">
<h1>Create your account</h1>
<form class="stack" method="post" action="/signup">
${csrfField(csrf)}
<input type="hidden" name="return_to" value="${returnTo}">
<label>Name <input name="name" required maxlength="200" autocomplete="name"></label>
<label>E-mail <input type="email" name="email" required maxlength="254" autocomplete="username"></label>
<label>Password (at least 10 characters) <input type="password" name="password" required minlength="10" maxlength="200" autocomplete="new-password"></label>
<button type="submit">Sign up</button>
</form>
<p class="muted">Have an account? <a href="/signin?return_to=${encodeURIComponent(returnTo)}">Sign in</a></p>
</section>`,
  );
}

/** Sign-in, sign-up and sign-out pages; the dashboard's pages are registered by their modules. */
export function webRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(dashboardPages(ctx));
    await app.register(verifyEmailPages(ctx));

    app.get('/static/waybill.css', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(stylesheet),
    );

    app.get('/static/local-time.js', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .type('text/javascript; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .send(localTime),
    );

    app.get('/static/copy.js', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .type('text/javascript; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .send(copyScript),
    );

    // The shell links the SVG; a browser that asks /favicon.ico anyway is sent to it (no 404 noise).
    app.get('/static/favicon.svg', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(favicon),
    );
    app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=86400').redirect('/static/favicon.svg', 301),
    );

    app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard'));

    app.get<{ Querystring: { return_to?: string } }>(
      '/signin',
      { schema: { hide: true } },
      async (request, reply) => {
        const returnTo = sameSiteReturnPath(ctx.config.webUrl, request.query.return_to);
        if (await pageUser(ctx, request)) return reply.redirect(returnTo);
        return sendPage(reply, signInPage(reply.generateCsrf(), returnTo));
      },
    );

    app.post<{ Body: Form }>(
      '/signin',
      {
        schema: { hide: true },
        preValidation: app.csrfProtection,
        config: { rateLimit: signInRateLimit(ctx.config) },
      },
      async (request, reply) => {
        const form = request.body ?? {};
        const returnTo = sameSiteReturnPath(ctx.config.webUrl, form.return_to);
        try {
          const { session, device } = await signIn(
            ctx,
            {
              email: String(form.email ?? '').slice(0, 254),
              password: String(form.password ?? '').slice(0, 200),
            },
            signInSource(request),
          );
          setSessionCookie(ctx, reply, session.token);
          setDeviceCookie(ctx, reply, device);
          return reply.redirect(returnTo, 303);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          if (typeof error.extra.retry_after === 'number')
            reply.header('retry-after', String(error.extra.retry_after));
          return sendPage(reply, signInPage(reply.generateCsrf(), returnTo, error.message), error.status);
        }
      },
    );

    app.get<{ Querystring: { return_to?: string } }>(
      '/signup',
      { schema: { hide: true } },
      async (request, reply) =>
        sendPage(
          reply,
          signUpPage(reply.generateCsrf(), sameSiteReturnPath(ctx.config.webUrl, request.query.return_to)),
        ),
    );

    app.post<{ Body: Form }>(
      '/signup',
      {
        schema: { hide: true },
        preValidation: app.csrfProtection,
        config: { rateLimit: signUpRateLimit },
      },
      async (request, reply) => {
        const form = request.body ?? {};
        const returnTo = sameSiteReturnPath(ctx.config.webUrl, form.return_to);
        const email = String(form.email ?? '');
        const password = String(form.password ?? '');
        const name = String(form.name ?? '').trim();
        if (
          password.length < 10 ||
          password.length > 200 ||
          !name ||
          name.length > 200 ||
          !email.includes('@') ||
          email.length > 254
        ) {
          return sendPage(
            reply,
            signUpPage(
              reply.generateCsrf(),
              returnTo,
              'Enter your name, an e-mail, and a password of 10 to 200 characters',
            ),
            400,
          );
        }
        try {
          await signUp(ctx, { email, password, name });
          const { session, device } = await signIn(ctx, { email, password }, signInSource(request));
          setSessionCookie(ctx, reply, session.token);
          setDeviceCookie(ctx, reply, device);
          return reply.redirect(returnTo, 303);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          return sendPage(reply, signUpPage(reply.generateCsrf(), returnTo, error.message), error.status);
        }
      },
    );

    app.post(
      '/signout',
      { schema: { hide: true }, preValidation: app.csrfProtection },
      async (request, reply) => {
        const user = await pageUser(ctx, request);
        if (user) await signOut(ctx, user.sessionId);
        clearSessionCookie(ctx, reply);
        return reply.redirect('/signin', 303);
      },
    );
  };
}

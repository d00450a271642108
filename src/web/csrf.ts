import { createHmac } from 'node:crypto';
import csrf from '@fastify/csrf-protection';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { derivedKey } from '../lib/crypto.ts';
import { SESSION_COOKIE } from './session.ts';

/**
 * CSRF protection of the pages' forms, bound to the session (issue 22 item 7, decision 0023).
 *
 * The secret lives in a cookie (double submit), which alone proves little: a sibling subdomain can
 * plant a cookie for this host, and with it a secret and token pair of its own that would pass for
 * any session. So every token also carries the session it was made for (the `userInfo` of
 * @fastify/csrf: an HMAC of the session cookie, or of nothing for a signed-out browser), and a token
 * made for another session, or for none, is refused (the signed-out forms below excepted). With secure cookies the secret's cookie is
 * also `__Host-` prefixed, which browsers let no other host set, so even the signed-out forms
 * (sign-in, sign-up, the verification link's page) cannot be fed a planted pair.
 */
/**
 * The forms a signed-out browser posts (their pages and their posts share the path): their tokens
 * are bound to no session, so that a second tab's sign-in form still works after the first tab
 * signed in. They act on no session's authority; `__Host-` is what keeps planted pairs off them.
 */
const SIGNED_OUT_FORMS = new Set(['/signin', '/signup', '/verify-email']);

export async function registerCsrf(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const bindingKey = derivedKey(ctx.config.secretKey, 'csrf session binding v1');
  const bindingOf = (request: FastifyRequest): string =>
    createHmac('sha256', bindingKey)
      .update(
        SIGNED_OUT_FORMS.has(request.routeOptions.url ?? '')
          ? 'signed-out form'
          : `session:${request.cookies[SESSION_COOKIE] ?? ''}`,
      )
      .digest('base64url');

  await app.register(csrf, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: ctx.config.secureCookies ? '__Host-waybill_csrf' : 'waybill_csrf',
    cookieOpts: {
      path: '/',
      sameSite: 'lax',
      httpOnly: true,
      secure: ctx.config.secureCookies,
      signed: false,
    },
    csrfOpts: { hmacKey: derivedKey(ctx.config.secretKey, 'csrf tokens v1') },
    getUserInfo: bindingOf,
  });

  // Every page's token is made for the session of its request: reply.generateCsrf() everywhere.
  app.addHook('onRequest', async (request, reply) => {
    const generate = reply.generateCsrf;
    reply.generateCsrf = (opts) => generate.call(reply, { ...opts, userInfo: bindingOf(request) });
  });
}

import { randomBytes } from 'node:crypto';
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { toAppError } from '../../http/errors.ts';
import { trackingPageRateLimit } from '../../http/rate-limits.ts';
import { sendPublicPage } from '../../web/public-layout.ts';
import { logoOf, lookOfCompany } from './branding.ts';
import { pickLanguage } from './language.ts';
import { notFoundPage, trackingPage } from './page.ts';
import { trackingSource } from './timeline.ts';
import { shipmentOfToken } from './tokens.ts';

type TokenParams = { token: string };

/** The recipient's public page `/t/{token}` and its logo: no sign-in, rate-limited per address. */
export function trackingPageRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    // A refusal here (the rate limit, a broken URL) is a plain page too, with the page's headers.
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const known = toAppError(error);
      if (!known || known.status >= 500) request.log.error({ err: error }, 'tracking page failed');
      const nonce = randomBytes(16).toString('base64');
      const status = known?.status ?? 500;
      if (known?.retryAfter !== undefined) reply.header('retry-after', String(known.retryAfter));
      return sendPublicPage(
        reply,
        nonce,
        notFoundPage(pickLanguage(request.headers['accept-language']), nonce),
        status,
      );
    });
    const rateLimit = trackingPageRateLimit(ctx.config);

    app.get<{ Params: TokenParams }>(
      '/t/:token',
      { schema: { hide: true }, config: { rateLimit } },
      async (request, reply) => {
        const language = pickLanguage(request.headers['accept-language']);
        const nonce = randomBytes(16).toString('base64');
        reply.header('vary', 'accept-language');
        const found = await shipmentOfToken(ctx.db, request.params.token);
        const facts = found ? await trackingSource(ctx, found) : null;
        if (!found || !facts) return sendPublicPage(reply, nonce, notFoundPage(language, nonce), 404);
        const look = await lookOfCompany(ctx.db, found.tenantId);
        const logoUrl = look.logo ? `/t/${request.params.token}/logo?v=${look.logo.slice(0, 12)}` : null;
        return sendPublicPage(reply, nonce, trackingPage({ language, look, facts, logoUrl, nonce }));
      },
    );

    app.get<{ Params: TokenParams }>(
      '/t/:token/logo',
      { schema: { hide: true }, config: { rateLimit } },
      async (request, reply) => {
        const found = await shipmentOfToken(ctx.db, request.params.token);
        const logo = found ? await logoOf(ctx.db, found.tenantId) : null;
        if (!logo) {
          const nonce = randomBytes(16).toString('base64');
          return sendPublicPage(reply, nonce, notFoundPage('en', nonce), 404);
        }
        return reply
          .header('x-robots-tag', 'noindex')
          .header('referrer-policy', 'no-referrer')
          .header('cache-control', 'private, max-age=86400')
          .header('x-content-type-options', 'nosniff')
          .type(logo.contentType)
          .send(logo.content);
      },
    );
  };
}

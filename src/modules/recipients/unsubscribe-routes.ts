import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { trackingPageRateLimit } from '../../http/rate-limits.ts';
import { html } from '../../web/html.ts';
import { publicLayout, sendPublicPage } from '../../web/public-layout.ts';
import { lookOfCompany } from './branding.ts';
import { pickLanguage, WORDS } from './language.ts';
import { notFoundPage } from './page.ts';
import { unsubscribe, unsubscribeTarget } from './unsubscribe.ts';

type TokenParams = { token: string };

/**
 * `{web_url}/u/{token}`, the e-mail's unsubscribe link and its List-Unsubscribe address: GET shows
 * one button (a link scanner's GET changes nothing), POST unsubscribes (the button, or the mail
 * client's one-click POST of RFC 8058, whatever its body).
 */
export function unsubscribeRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 4096 }, (_request, _body, done) =>
      done(null, null),
    );
    const rateLimit = trackingPageRateLimit(ctx.config);

    async function answer(
      request: FastifyRequest<{ Params: TokenParams }>,
      reply: FastifyReply,
      done: boolean,
    ) {
      const language = pickLanguage(request.headers['accept-language']);
      const words = WORDS[language];
      const nonce = randomBytes(16).toString('base64');
      const target = await unsubscribeTarget(ctx.db, request.params.token);
      const send = (status: number, page: ReturnType<typeof html>) =>
        sendPublicPage(reply, nonce, page, status);
      if (!target) return send(404, notFoundPage(language, nonce));
      if (done) await unsubscribe(ctx, target);
      const look = await lookOfCompany(ctx.db, target.tenantId);
      const body = done
        ? html`<main class="tracking"><h1>${words.unsubscribedTitle}</h1><p role="status">${words.unsubscribedBody}</p></main>`
        : html`<main class="tracking"><h1>${words.unsubscribeConfirm}</h1>
<form method="post" action="/u/${request.params.token}"><button type="submit">${words.unsubscribeButton}</button></form></main>`;
      return send(
        200,
        publicLayout(
          {
            title: look.name,
            lang: language,
            styleNonce: nonce,
            styleVars: { brand: look.accent, 'on-brand': look.onAccent },
          },
          html`<header class="brand-band"><p class="brand-name">${look.name}</p></header>${body}`,
        ),
      );
    }

    app.get<{ Params: TokenParams }>(
      '/u/:token',
      { schema: { hide: true }, config: { rateLimit } },
      (request, reply) => answer(request, reply, false),
    );
    app.post<{ Params: TokenParams }>(
      '/u/:token',
      { schema: { hide: true }, config: { rateLimit, rawBody: true } },
      (request, reply) => answer(request, reply, true),
    );
  };
}

import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { peerAddress } from '../../http/rate-limits.ts';
import { AppError } from '../../lib/errors.ts';
import { addressLimit } from './address-limit.ts';
import { registerAuthorizeRoutes } from './authorize/routes.ts';
import { basicCredentials, type Presented } from './client-auth.ts';
import { oauthErrorHandler } from './errors.ts';
import { authorizationServerMetadata } from './metadata.ts';
import { formParams } from './params.ts';
import { RegistrationError, RegistrationLimitError, registerClient } from './registration.ts';
import { revocationRequest } from './revocation.ts';
import { tokenRequest } from './token-endpoint.ts';

/** Adds the `atk_live_` bearer to the API's token resolvers (spec 5.1). */
export { registerOAuth } from './access-tokens.ts';

/** The client named by a token or revoke request, for the per-client rate limit. */
function clientKey(request: FastifyRequest): string {
  let basic: Presented | null = null;
  try {
    basic = basicCredentials(request.headers.authorization);
  } catch {
    // Malformed credentials are refused by the endpoint itself; they count as no client here.
  }
  if (basic) return `client:${basic.clientId.slice(0, 100)}`;
  const body = request.body as Record<string, unknown> | undefined;
  return `client:${typeof body?.client_id === 'string' ? body.client_id.slice(0, 100) : ''}`;
}

/**
 * OAuth 2.1 section 2.4.1: brute-force protection where secrets are checked. Two limits, each
 * WAYBILL_OAUTH_RATE_LIMIT per minute: per client (whatever address it comes from) and per address
 * (whatever client it names). They run after the body is parsed, since the client id may be in it.
 */
function rateLimits(app: FastifyInstance, ctx: AppContext) {
  return [
    addressLimit(ctx.config.oauthRateLimit),
    app.rateLimit({ max: ctx.config.oauthRateLimit, timeWindow: 60_000, keyGenerator: clientKey }),
  ];
}

export function oauthRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const metadata = JSON.stringify(authorizationServerMetadata(ctx.config));
    // RFC 8414 section 3: the metadata document, built once.
    app.get('/.well-known/oauth-authorization-server', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .type('application/json; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .send(metadata),
    );

    // Each endpoint counts its own requests.
    const endpoint = () => ({
      schema: { hide: true },
      errorHandler: oauthErrorHandler,
      preHandler: rateLimits(app, ctx),
    });

    app.post('/oauth/token', endpoint(), async (request, reply) => {
      const response = await tokenRequest(ctx, request.headers.authorization, formParams(request));
      // RFC 6749 section 5.1: the token response is never cached.
      return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(response);
    });

    app.post('/oauth/revoke', endpoint(), async (request, reply) => {
      await revocationRequest(ctx, request.headers.authorization, formParams(request));
      // RFC 7009 section 2.2: 200 whether or not the token existed.
      return reply.header('cache-control', 'no-store').code(200).send();
    });

    // RFC 7591: dynamic registration of public agent clients, the fallback to metadata documents.
    app.post(
      '/oauth/register',
      {
        schema: { hide: true },
        errorHandler: (error: Error & { statusCode?: number }, request, reply) => {
          if (error instanceof RegistrationLimitError) {
            return reply
              .code(429)
              .header('retry-after', error.retryAfterS)
              .header('cache-control', 'no-store')
              .send({ error: 'invalid_request', error_description: error.message });
          }
          if (error instanceof RegistrationError) {
            return reply
              .code(400)
              .header('cache-control', 'no-store')
              .send({ error: error.code, error_description: error.message });
          }
          // The shared input checks (control characters anywhere in the body) refuse the metadata.
          if (error instanceof AppError && error.status < 500) {
            return reply
              .code(400)
              .header('cache-control', 'no-store')
              .send({ error: 'invalid_client_metadata', error_description: error.message });
          }
          const status = error.statusCode ?? 500;
          if (status >= 400 && status < 500) {
            return reply.code(400).header('cache-control', 'no-store').send({
              error: 'invalid_client_metadata',
              error_description: 'send the client metadata as a JSON object',
            });
          }
          return oauthErrorHandler(error as never, request, reply);
        },
      },
      async (request, reply) => {
        const registered = await registerClient(ctx, request.body, peerAddress(request));
        return reply.code(201).header('cache-control', 'no-store').send(registered);
      },
    );

    registerAuthorizeRoutes(app, ctx);
  };
}

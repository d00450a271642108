import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { AppError } from '../lib/errors.ts';
import type { Principal } from '../modules/accounts/access.ts';
import { authenticateBearer } from '../modules/accounts/authenticate.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who calls the API, from `Authorization: Bearer`; null when the header is absent. */
    principal: Principal | null;
  }
}

export function bearerOf(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header.trim());
  if (!match?.[1]) throw new AppError('auth.invalid_token', 'Authorization must be "Bearer <token>"');
  return match[1];
}

/** Resolves the bearer token of every /v1 call before anything else runs, so a bad token is always 401. */
export function registerBearerAuth(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/')) return;
    const secret = bearerOf(request);
    request.principal = secret ? await authenticateBearer(ctx, secret) : null;
  });
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { AppError } from '../lib/errors.ts';
import { type Principal, requireAccess, requireUser } from '../modules/accounts/access.ts';
import { authenticateBearer } from '../modules/accounts/authenticate.ts';
import type { Scope } from '../modules/accounts/roles.ts';

/**
 * Who may call a /v1 route, declared on the route as `config: { auth }`:
 * - `public`: anyone (sign-up, sign-in); a token that is sent must still be valid;
 * - `session`: a signed-in person's token (`ust_`), never an API or app token (spec 5.2);
 * - `{ scope }`: an API token or app access token holding the scope.
 */
export type RouteAuth = 'public' | 'session' | { scope: Scope };

declare module 'fastify' {
  interface FastifyRequest {
    /** Who calls the API, from `Authorization: Bearer`; null when the header is absent. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Who may call the route; checked on arrival, before the body is read (registerBearerAuth). */
    auth?: RouteAuth;
  }
}

export function bearerOf(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(header.trim());
  if (!match?.[1]) throw new AppError('auth.invalid_token', 'Authorization must be "Bearer <token>"');
  return match[1];
}

/** 401 without a caller, 403 for the wrong kind of caller or a missing scope. */
export function authorize(auth: RouteAuth, principal: Principal | null): void {
  if (auth === 'public') return;
  if (auth === 'session') requireUser(principal);
  else requireAccess(principal, auth.scope);
}

const isApiRoute = (url: string | undefined) => url?.startsWith('/v1/') === true;

/**
 * Authentication and authorisation of every /v1 call happen when it arrives (onRequest), before
 * its body is read or validated: a caller without the right token learns 401 or 403, never the
 * body's schema. Every /v1 route must declare `config.auth`; one that does not fails at start.
 */
export function registerBearerAuth(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('principal', null);
  app.addHook('onRoute', (route) => {
    if (isApiRoute(route.url) && route.config?.auth === undefined) {
      throw new Error(`${String(route.method)} ${route.url} declares no config.auth`);
    }
  });
  app.addHook('onRequest', async (request) => {
    // Unknown /v1 paths too: a bad token is 401 wherever it is sent.
    if (!isApiRoute(request.url)) return;
    const secret = bearerOf(request);
    request.principal = secret ? await authenticateBearer(ctx, secret) : null;
    // RFC 8707 and CONTRACT.md (Agents, Trust 3): a token for the MCP server, an app's grant or a
    // headless agent's API token, does not work here.
    if (request.principal && request.principal.kind !== 'user' && request.principal.resource !== 'v1') {
      request.principal = null;
      throw new AppError(
        'auth.invalid_token',
        `This token was issued for ${ctx.config.baseUrl}/mcp, not the API`,
      );
    }
    const auth = request.routeOptions.config.auth;
    if (auth !== undefined) authorize(auth, request.principal);
  });
}

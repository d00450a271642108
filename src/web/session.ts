import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { DEVICE_COOKIE, type SignInSource, TRUST_LIFETIME_MS } from '../modules/accounts/sign-in-throttle.ts';
import { findSession, SESSION_LIFETIME_MS } from '../modules/accounts/users.ts';

export const SESSION_COOKIE = 'waybill_session';
/** Which company (or merchant account) and mode the dashboard shows (dashboard.ts). */
export const VIEW_COOKIE = 'waybill_view';

/**
 * The name a cookie of ours has on the wire: on https `__Host-` and the name, which a browser
 * accepts only when secure, for path `/` and without a Domain, so that no sibling subdomain can
 * set or replace it (a planted session is a sign-in as the attacker). Code reads and writes the
 * plain name through request.cookies and this.
 */
export function cookieName(ctx: AppContext, base: string): string {
  return ctx.config.secureCookies ? `__Host-${base}` : base;
}

/** The cookies that carry or choose a session, and how each is written. */
function prefixedCookies(): Record<string, CookieSerializeOptions> {
  const base = { path: '/', httpOnly: true, sameSite: 'lax', secure: true } as const;
  return {
    [SESSION_COOKIE]: { ...base, maxAge: SESSION_LIFETIME_MS / 1000 },
    [DEVICE_COOKIE]: { ...base, maxAge: TRUST_LIFETIME_MS / 1000 },
    [VIEW_COOKIE]: base,
  };
}

/**
 * On https, `request.cookies[<name>]` holds the `__Host-` cookie's value. A browser that still has
 * one under the plain name from before the prefix came is read once under it and given the new
 * one, so that nobody is signed out; the plain one is cleared. Registered right after the cookie
 * parser, before anything reads a cookie.
 */
export function registerCookieNames(app: FastifyInstance, ctx: AppContext): void {
  if (!ctx.config.secureCookies) return;
  const cookies = prefixedCookies();
  app.addHook('onRequest', async (request, reply) => {
    for (const [name, options] of Object.entries(cookies)) {
      const current = request.cookies[`__Host-${name}`];
      const old = request.cookies[name];
      if (old !== undefined) {
        if (current === undefined) reply.setCookie(`__Host-${name}`, old, options);
        reply.clearCookie(name, { path: '/' });
      }
      const value = current ?? old;
      if (value === undefined) delete request.cookies[name];
      else request.cookies[name] = value;
    }
  });
}

export interface PageUser {
  userId: string;
  sessionId: string;
}

/** The signed-in person of a page request, from the session cookie; null when signed out. */
export async function pageUser(ctx: AppContext, request: FastifyRequest): Promise<PageUser | null> {
  const token = request.cookies[SESSION_COOKIE];
  if (!token?.startsWith('ust_')) return null;
  return findSession(ctx, token);
}

export function setSessionCookie(ctx: AppContext, reply: FastifyReply, token: string): void {
  reply.setCookie(cookieName(ctx, SESSION_COOKIE), token, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.config.secureCookies,
    maxAge: SESSION_LIFETIME_MS / 1000,
  });
}

/** Where a page's sign-in comes from: the address, and the browser's device cookie. */
export function signInSource(request: FastifyRequest): SignInSource {
  return { address: request.ip, browser: true, device: request.cookies[DEVICE_COOKIE] };
}

/**
 * The browser's device token: a browser that signed in to an account before is not held back by
 * failed sign-ins from elsewhere (sign-in-throttle.ts). It outlives sign-out on purpose.
 */
export function setDeviceCookie(ctx: AppContext, reply: FastifyReply, device: string | null): void {
  if (!device) return;
  reply.setCookie(cookieName(ctx, DEVICE_COOKIE), device, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.config.secureCookies,
    maxAge: TRUST_LIFETIME_MS / 1000,
  });
}

export function clearSessionCookie(ctx: AppContext, reply: FastifyReply): void {
  reply.clearCookie(cookieName(ctx, SESSION_COOKIE), { path: '/', secure: ctx.config.secureCookies });
}

export const DEFAULT_RETURN_PATH = '/dashboard';

/**
 * Where to send a person after sign-in or a view switch, given a target they (or a link) chose:
 * the target resolved against the site's own origin with the WHATWG URL parser, the one browsers
 * use, and kept only when the origin is unchanged. String checks are not enough: browsers drop
 * tabs and newlines (`/\t/evil.example`), read `\` as `/`, and `/.//evil.example` normalises to
 * the scheme-relative `//evil.example`. The answer is the resolved path, query and fragment, which
 * the parser has percent-encoded, so no control character reaches the Location header.
 */
export function sameSiteReturnPath(webUrl: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return DEFAULT_RETURN_PATH;
  const site = new URL(webUrl);
  let target: URL;
  try {
    target = new URL(value, site.origin);
  } catch {
    return DEFAULT_RETURN_PATH;
  }
  // A path that starts with two slashes would be read by the browser as another host.
  if (target.origin !== site.origin || target.pathname.startsWith('//')) return DEFAULT_RETURN_PATH;
  return `${target.pathname}${target.search}${target.hash}`;
}

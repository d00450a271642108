import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import { findSession, SESSION_LIFETIME_MS } from '../modules/accounts/users.ts';

export const SESSION_COOKIE = 'waybill_session';

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
  reply.setCookie(SESSION_COOKIE, token, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.config.secureCookies,
    maxAge: SESSION_LIFETIME_MS / 1000,
  });
}

export function clearSessionCookie(reply: FastifyReply): void {
  reply.clearCookie(SESSION_COOKIE, { path: '/' });
}

/** Only same-site paths are followed after sign-in, never another origin. */
export function safeReturnPath(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('/') || value.startsWith('//') || value.includes('\\')) {
    return '/dashboard';
  }
  return value;
}

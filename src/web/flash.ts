import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import type { FormRetry } from './fields.ts';

/** What a page says once, on top, after the form that led to it (post, redirect, get). */
export interface Flash {
  kind: 'ok' | 'error';
  message: string;
  /** Secrets shown this once (a new API token, a signing secret), with a note on keeping them. */
  secrets?: ShownSecret[];
  note?: string | null;
  /** After a refused form: its fields as typed and their errors, for the form's page to show again. */
  form?: FormRetry | null;
}

export interface ShownSecret {
  label: string;
  value: string;
  /** The copy field's name, for a script that reads the page. */
  name?: string;
}

const FLASH_COOKIE = 'waybill_flash';
/** Long enough for a redirect and a slow page; a flash nobody read is gone after it. */
const FLASH_LIFETIME_MS = 5 * 60_000;

/**
 * Keeps a flash for the next page this browser reads (migration 0095): the row holds the message,
 * and the secret sealed; the cookie holds only the row's random id. Never the URL: an address is
 * logged, kept in history and sent on in Referer.
 */
export async function leaveFlash(ctx: AppContext, reply: FastifyReply, flash: Flash): Promise<void> {
  const now = ctx.clock.now();
  const id = randomBytes(32).toString('base64url');
  await ctx.db.deleteFrom('page_flashes').where('expires_at', '<', now).execute();
  await ctx.db
    .insertInto('page_flashes')
    .values({
      id,
      kind: flash.kind,
      message: flash.message.slice(0, 1000),
      // What was typed may be personal data or a secret: sealed like one.
      secret_sealed:
        flash.secrets?.length || flash.form
          ? ctx.secrets.seal(JSON.stringify({ secrets: flash.secrets ?? [], form: flash.form ?? null }))
          : null,
      secret_note: flash.note ?? null,
      expires_at: new Date(now.getTime() + FLASH_LIFETIME_MS),
    })
    .execute();
  reply.setCookie(FLASH_COOKIE, id, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.config.secureCookies,
    maxAge: FLASH_LIFETIME_MS / 1000,
  });
}

/** The pending flash of this browser, deleted as it is read: a reload shows it no more. */
export async function takeFlash(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Flash | null> {
  const id = request.cookies[FLASH_COOKIE];
  if (!id) return null;
  reply.clearCookie(FLASH_COOKIE, { path: '/' });
  if (!/^[\w-]{43}$/.test(id)) return null;
  const row = await ctx.db
    .deleteFrom('page_flashes')
    .where('id', '=', id)
    .returning(['kind', 'message', 'secret_sealed', 'secret_note', 'expires_at'])
    .executeTakeFirst();
  if (!row || row.expires_at.getTime() < ctx.clock.now().getTime()) return null;
  const sealed = row.secret_sealed
    ? (JSON.parse(ctx.secrets.open(row.secret_sealed)) as
        | ShownSecret[]
        | { secrets: ShownSecret[]; form: FormRetry | null })
    : [];
  // A row written before forms were kept holds the secrets' list itself.
  const opened = Array.isArray(sealed) ? { secrets: sealed, form: null } : sealed;
  return {
    kind: row.kind === 'error' ? 'error' : 'ok',
    message: row.message,
    secrets: opened.secrets,
    note: row.secret_note,
    form: opened.form,
  };
}

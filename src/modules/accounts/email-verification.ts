import type { AppContext } from '../../context.ts';
import { DAY, HOUR, MINUTE } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { hashSecret, newId, randomBase62 } from '../../lib/ids.ts';
import { sendMail } from '../mail/outbox.ts';

/**
 * Verified e-mail addresses (CONTRACT.md, People; decision 0023). Sign-up, and the person on
 * request, get a link to `{web_url}/verify-email?token=...`: single use, valid 24 hours, the token
 * kept only as its SHA-256. Opening the link shows a button (so that a mail scanner fetching the
 * link does not spend it); pressing it verifies the address the link was sent to, provided it is
 * still the person's address. A newer link replaces the older ones.
 */
export const VERIFICATION_LIFETIME_MS = DAY;
/** Resending: one link a minute, five an hour, per person. */
export const RESEND_INTERVAL_MS = MINUTE;
export const RESENDS_PER_HOUR = 5;

const TOKEN_PREFIX = 'emv_';
export const VERIFICATION_SUBJECT = 'Confirm your e-mail address for Waybill';

export interface VerificationSent {
  email: string;
  expires_at: string;
}

/** Makes a new link for the person's current address and mails it; older links stop working. */
export async function sendVerificationLink(ctx: AppContext, userId: string): Promise<VerificationSent> {
  const user = await ctx.db
    .selectFrom('users')
    .select(['id', 'email', 'name'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!user) throw new AppError('user.not_found');
  const now = ctx.clock.now();
  const token = `${TOKEN_PREFIX}${randomBase62(43)}`;
  const expiresAt = new Date(now.getTime() + VERIFICATION_LIFETIME_MS);
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('email_verifications')
      .set({ expires_at: now })
      .where('user_id', '=', userId)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .execute();
    await trx
      .insertInto('email_verifications')
      .values({
        id: newId('evr'),
        user_id: userId,
        email: user.email,
        token_hash: hashSecret(token),
        created_at: now,
        expires_at: expiresAt,
        used_at: null,
      })
      .execute();
  });
  const link = `${ctx.config.webUrl}/verify-email?token=${encodeURIComponent(token)}`;
  await sendMail(ctx, {
    to: [user.email],
    subject: VERIFICATION_SUBJECT,
    text: [
      `Hello ${user.name},`,
      '',
      'Open this link and press its button to confirm that this address is yours:',
      link,
      '',
      `The link works once, until ${expiresAt.toISOString()}. If you did not sign up to Waybill, ignore this e-mail.`,
    ].join('\n'),
  });
  return { email: user.email, expires_at: expiresAt.toISOString() };
}

/** POST /v1/auth/email-verification (and the dashboard's banner): a new link, rate-limited. */
export async function resendVerificationLink(ctx: AppContext, userId: string): Promise<VerificationSent> {
  const user = await ctx.db
    .selectFrom('users')
    .select(['email_verified_at'])
    .where('id', '=', userId)
    .executeTakeFirst();
  if (!user) throw new AppError('user.not_found');
  if (user.email_verified_at) throw new AppError('user.email_already_verified');
  const now = ctx.clock.now().getTime();
  const recent = await ctx.db
    .selectFrom('email_verifications')
    .select('created_at')
    .where('user_id', '=', userId)
    .where('created_at', '>', new Date(now - HOUR))
    .orderBy('created_at', 'desc')
    .execute();
  const latest = recent[0]?.created_at.getTime();
  let opensAt: number | null = null;
  if (latest !== undefined && latest > now - RESEND_INTERVAL_MS) opensAt = latest + RESEND_INTERVAL_MS;
  const oldestCounted = recent[RESENDS_PER_HOUR - 1];
  if (oldestCounted) opensAt = Math.max(opensAt ?? 0, oldestCounted.created_at.getTime() + HOUR);
  if (opensAt !== null) {
    throw new AppError(
      'rate_limited',
      `A link was sent recently: ask again after ${new Date(opensAt).toISOString()}`,
      {
        retry_after: Math.max(1, Math.ceil((opensAt - now) / 1000)),
      },
    );
  }
  return sendVerificationLink(ctx, userId);
}

/** What a link shows before it is used: whose address it confirms (null when it no longer works). */
export async function verificationLinkFor(ctx: AppContext, token: string): Promise<{ email: string } | null> {
  if (!token.startsWith(TOKEN_PREFIX) || token.length > 100) return null;
  const row = await ctx.db
    .selectFrom('email_verifications')
    .innerJoin('users', 'users.id', 'email_verifications.user_id')
    .select(['email_verifications.email'])
    .where('email_verifications.token_hash', '=', hashSecret(token))
    .where('email_verifications.used_at', 'is', null)
    .where('email_verifications.expires_at', '>', ctx.clock.now())
    // A link confirms the address it was sent to, while it is still the person's.
    .whereRef('users.email', '=', 'email_verifications.email')
    .executeTakeFirst();
  return row ?? null;
}

/** Spends the link and verifies its address; an unknown, used or expired link is refused. */
export async function verifyEmail(ctx: AppContext, token: string): Promise<{ email: string }> {
  if (!token.startsWith(TOKEN_PREFIX) || token.length > 100)
    throw new AppError('auth.verification_link_invalid');
  const now = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    const used = await trx
      .updateTable('email_verifications')
      .set({ used_at: now })
      .where('token_hash', '=', hashSecret(token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['user_id', 'email'])
      .executeTakeFirst();
    if (!used) throw new AppError('auth.verification_link_invalid');
    const verified = await trx
      .updateTable('users')
      .set((eb) => ({ email_verified_at: eb.fn.coalesce('email_verified_at', eb.val(now)), updated_at: now }))
      .where('id', '=', used.user_id)
      .where('email', '=', used.email)
      .returning('email')
      .executeTakeFirst();
    if (!verified) throw new AppError('auth.verification_link_invalid');
    return { email: verified.email };
  });
}

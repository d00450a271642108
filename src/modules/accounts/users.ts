import type { AppContext } from '../../context.ts';
import { addMs, DAY } from '../../lib/clock.ts';
import { hashPassword, passwordDecoy, verifyPassword } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { hashSecret, newId, newSecret } from '../../lib/ids.ts';
import { sendVerificationLink } from './email-verification.ts';
import { countSignInAttempt, type SignInSource } from './sign-in-throttle.ts';
import type { UsersTable } from './tables.ts';

export const SESSION_LIFETIME_MS = 14 * DAY;

export interface Person {
  id: string;
  email: string;
  name: string;
  email_verified: boolean;
  is_reviewer: boolean;
  created_at: string;
}

type ReviewerFacts = Pick<UsersTable, 'email' | 'demo_reviewer' | 'email_verified_at'>;

/**
 * Listed as service staff: the e-mails of WAYBILL_REVIEWER_EMAILS (lower case, as every stored
 * e-mail is), and the demo's reviewer only when the demo seeded that very account (not whoever
 * signs up with its e-mail) and the demo is on. Listed is not enough to review: see isReviewer.
 */
export function isListedReviewer(ctx: AppContext, row: Pick<UsersTable, 'email' | 'demo_reviewer'>): boolean {
  return (
    ctx.config.reviewerEmails.has(normalizeEmail(row.email)) || (ctx.config.demoReviewer && row.demo_reviewer)
  );
}

/** A reviewer: listed, and the address proved (CONTRACT.md: reviewers are verified people). */
export function isReviewer(ctx: AppContext, row: ReviewerFacts): boolean {
  return row.email_verified_at !== null && isListedReviewer(ctx, row);
}

export function presentPerson(
  ctx: AppContext,
  row: Pick<UsersTable, 'id' | 'email' | 'name' | 'demo_reviewer' | 'email_verified_at' | 'created_at'>,
): Person {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    email_verified: row.email_verified_at !== null,
    is_reviewer: isReviewer(ctx, row),
    created_at: row.created_at.toISOString(),
  };
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function signUp(
  ctx: AppContext,
  input: { email: string; password: string; name: string },
  options: { verified?: boolean } = {},
): Promise<Person> {
  const email = normalizeEmail(input.email);
  const now = ctx.clock.now();
  const row = {
    id: newId('usr'),
    email,
    name: input.name.trim(),
    password_hash: await hashPassword(input.password),
    demo_reviewer: false,
    // Only the demo's seed makes people verified from the start.
    email_verified_at: options.verified ? now : null,
    created_at: now,
    updated_at: now,
  };
  const inserted = await ctx.db
    .insertInto('users')
    .values(row)
    .onConflict((oc) => oc.column('email').doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) throw new AppError('user.email_taken');
  if (!options.verified) await sendVerificationLink(ctx, row.id);
  return presentPerson(ctx, row);
}

export interface SessionGrant {
  token: string;
  expires_at: string;
  user: Person;
}

/**
 * Signs in; answers the session and the browser's device token (pages keep it in a cookie, so that
 * this browser is not held back by failures from elsewhere: sign-in-throttle.ts).
 */
export async function signIn(
  ctx: AppContext,
  input: { email: string; password: string },
  source: SignInSource,
): Promise<{ session: SessionGrant; device: string | null }> {
  const email = normalizeEmail(input.email);
  // Throttled per account and source, with an account-wide ceiling; counted before the password is checked.
  const ticket = await countSignInAttempt(ctx, email, source);
  const user = await ctx.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
  // Spend the same time whether or not the person exists.
  const ok = await verifyPassword(input.password, user?.password_hash ?? (await passwordDecoy()));
  if (!user || !ok) throw new AppError('auth.invalid_credentials');
  const { device } = await ticket.succeeded();
  return { session: await startSession(ctx, user), device };
}

export async function startSession(ctx: AppContext, user: UsersTable): Promise<SessionGrant> {
  const token = newSecret('ust_');
  const now = ctx.clock.now();
  const expiresAt = addMs(now, SESSION_LIFETIME_MS);
  await ctx.db
    .insertInto('sessions')
    .values({
      id: newId('ses'),
      user_id: user.id,
      token_hash: hashSecret(token),
      created_at: now,
      expires_at: expiresAt,
      revoked_at: null,
    })
    .execute();
  return { token, expires_at: expiresAt.toISOString(), user: presentPerson(ctx, user) };
}

export async function signOut(ctx: AppContext, sessionId: string): Promise<void> {
  await ctx.db
    .updateTable('sessions')
    .set({ revoked_at: ctx.clock.now() })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Resolves a `ust_` token (API header or page cookie) to its live session. */
export async function findSession(
  ctx: AppContext,
  token: string,
): Promise<{ sessionId: string; userId: string } | null> {
  const row = await ctx.db
    .selectFrom('sessions')
    .select(['id', 'user_id'])
    .where('token_hash', '=', hashSecret(token))
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', ctx.clock.now())
    .executeTakeFirst();
  return row ? { sessionId: row.id, userId: row.user_id } : null;
}

export async function getPerson(ctx: AppContext, userId: string): Promise<Person> {
  const row = await ctx.db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
  if (!row) throw new AppError('user.not_found');
  return presentPerson(ctx, row);
}

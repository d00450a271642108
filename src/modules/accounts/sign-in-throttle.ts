import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { MINUTE } from '../../lib/clock.ts';
import { derivedKey } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';

/**
 * The per-account sign-in limit, across addresses and routes (the API's POST /v1/auth/sessions and
 * the /signin form both sign in through users.signIn): at most SIGN_IN_FAILURES_PER_WINDOW failed
 * sign-ins to one account in a window of SIGN_IN_WINDOW_MS opened by the first; past that, every
 * sign-in to the account answers 429 `rate_limited` until the window ends, the right password
 * included, without the password being checked. It bounds guessing spread over many addresses,
 * which the per-address limit (http/rate-limits.ts) cannot see. The count lives in the database, so
 * every process shares it, and is kept for unknown e-mails too, so a 429 says nothing about whether
 * an account exists. The e-mail itself is not stored: rows are keyed by an HMAC of it.
 */
export const SIGN_IN_FAILURES_PER_WINDOW = 20;
export const SIGN_IN_WINDOW_MS = 15 * MINUTE;

function accountKey(ctx: AppContext, normalizedEmail: string): string {
  const key = derivedKey(ctx.config.secretKey, 'sign-in throttle v1');
  return createHmac('sha256', key).update(normalizedEmail).digest('base64url');
}

/**
 * Counts this sign-in as a failure before the password is checked (so that concurrent guesses
 * cannot all pass the count), and refuses it when the account is over the limit. Answers the
 * refund to call when the password turns out right.
 */
export async function countSignInAttempt(
  ctx: AppContext,
  normalizedEmail: string,
): Promise<() => Promise<void>> {
  const key = accountKey(ctx, normalizedEmail);
  const now = ctx.clock.now();
  const expired = new Date(now.getTime() - SIGN_IN_WINDOW_MS);
  const row = await ctx.db
    .insertInto('sign_in_failures')
    .values({ account_key: key, window_started_at: now, failures: 1 })
    .onConflict((oc) =>
      oc.column('account_key').doUpdateSet({
        // A window that has ended starts again with this attempt.
        failures: sql`CASE WHEN sign_in_failures.window_started_at <= ${expired} THEN 1 ELSE sign_in_failures.failures + 1 END`,
        window_started_at: sql`CASE WHEN sign_in_failures.window_started_at <= ${expired} THEN ${now}::timestamptz ELSE sign_in_failures.window_started_at END`,
      }),
    )
    .returning(['failures', 'window_started_at'])
    .executeTakeFirstOrThrow();
  if (row.failures > SIGN_IN_FAILURES_PER_WINDOW) {
    const opens = new Date(row.window_started_at.getTime() + SIGN_IN_WINDOW_MS);
    throw new AppError(
      'rate_limited',
      `Too many failed sign-ins to this account: try again after ${opens.toISOString()}`,
    );
  }
  return async () => {
    await ctx.db
      .updateTable('sign_in_failures')
      .set({ failures: sql`greatest(failures - 1, 0)` })
      .where('account_key', '=', key)
      .execute();
  };
}

/** Forgets windows that have ended; run by the periodic cleaner. */
export async function purgeSignInFailures(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .deleteFrom('sign_in_failures')
    .where('window_started_at', '<=', new Date(ctx.clock.now().getTime() - SIGN_IN_WINDOW_MS))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

import { createHmac } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { DAY, MINUTE, SECOND } from '../../lib/clock.ts';
import { derivedKey } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { randomBase62 } from '../../lib/ids.ts';

/**
 * The per-account sign-in throttle, across addresses and routes (the API's POST /v1/auth/sessions
 * and the /signin form both sign in through users.signIn), decision 0023.
 *
 * A growing delay, never a lock: the first SIGN_IN_FREE_FAILURES failed sign-ins to an account cost
 * nothing; after that, each further attempt waits FIRST_DELAY_MS, doubling with every failure up to
 * MAX_DELAY_MS (429 `rate_limited` with Retry-After, the password not checked). A quiet day forgets
 * the failures. The delay bounds guessing spread over many addresses, which the per-address limit
 * (http/rate-limits.ts) cannot see.
 *
 * Failures from elsewhere do not hold back the person: a source that signed in to the account
 * successfully before (the browser's device cookie, set on sign-in, or the client address) is
 * throttled on its own key, apart from the rest of the world. So whoever guesses a person's
 * password from elsewhere slows down only themselves and other unknown places.
 *
 * Keys are HMACs (of the normalised e-mail, of the device token, of the address): neither e-mails
 * that never signed up nor addresses are stored. The count lives in the database, so every process
 * shares it, and is kept for unknown e-mails too, so a 429 says nothing about whether an account
 * exists.
 */
export const SIGN_IN_FREE_FAILURES = 5;
export const FIRST_DELAY_MS = SECOND;
export const MAX_DELAY_MS = 15 * MINUTE;
/** A day without a failure forgets the failures. */
export const FORGET_FAILURES_MS = DAY;
/** A source that has not signed in for this long is a stranger again. */
export const TRUST_LIFETIME_MS = 90 * DAY;

export const DEVICE_COOKIE = 'waybill_device';
const DEVICE_PREFIX = 'dev_';

/** Where a sign-in comes from: the client address, and the browser's device cookie when it has one. */
export interface SignInSource {
  address: string;
  /** A browser (the pages) keeps a device cookie; an API client does not. */
  browser?: boolean;
  device?: string | undefined;
}

/** The wait after the given number of failures in a row, before the next attempt. */
export function delayAfter(failures: number): number {
  if (failures < SIGN_IN_FREE_FAILURES) return 0;
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (failures - SIGN_IN_FREE_FAILURES));
}

function hmac(ctx: AppContext, value: string): string {
  const key = derivedKey(ctx.config.secretKey, 'sign-in throttle v2');
  return createHmac('sha256', key).update(value).digest('base64url');
}

function sourceKeys(ctx: AppContext, source: SignInSource): string[] {
  const keys: string[] = [];
  if (source.device?.startsWith(DEVICE_PREFIX) && source.device.length <= 100) {
    keys.push(hmac(ctx, `device:${source.device}`));
  }
  keys.push(hmac(ctx, `address:${source.address}`));
  return keys;
}

export interface SignInTicket {
  /** Call when the password was right: forgets this key's failures and trusts the source. */
  succeeded(): Promise<{ device: string | null }>;
}

/**
 * Counts this sign-in as a failure before the password is checked (so that concurrent guesses
 * cannot all pass the count), and refuses it while its key must wait. Answers the ticket to call
 * when the password turns out right.
 */
export async function countSignInAttempt(
  ctx: AppContext,
  normalizedEmail: string,
  source: SignInSource,
): Promise<SignInTicket> {
  const accountKey = hmac(ctx, `account:${normalizedEmail}`);
  const now = ctx.clock.now();
  const sources = sourceKeys(ctx, source);
  const trusted = await ctx.db
    .selectFrom('sign_in_trust')
    .select('source_key')
    .where('account_key', '=', accountKey)
    .where('source_key', 'in', sources)
    .where('last_success_at', '>', new Date(now.getTime() - TRUST_LIFETIME_MS))
    .execute();
  // The device first: it is the more precise of the two.
  const trustedKey = sources.find((key) => trusted.some((row) => row.source_key === key));
  const throttleKey = trustedKey ? `${accountKey}|${trustedKey}` : accountKey;

  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('sign_in_delays')
      .values({ throttle_key: throttleKey, failures: 0, last_failure_at: now, next_attempt_at: now })
      .onConflict((oc) => oc.column('throttle_key').doNothing())
      .execute();
    const row = await trx
      .selectFrom('sign_in_delays')
      .selectAll()
      .where('throttle_key', '=', throttleKey)
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (row.next_attempt_at > now) {
      const waitMs = row.next_attempt_at.getTime() - now.getTime();
      throw new AppError(
        'rate_limited',
        `Too many failed sign-ins to this account: try again after ${row.next_attempt_at.toISOString()}`,
        { retry_after: Math.ceil(waitMs / 1000) },
      );
    }
    const forgotten = row.last_failure_at.getTime() <= now.getTime() - FORGET_FAILURES_MS;
    const failures = (forgotten ? 0 : row.failures) + 1;
    await trx
      .updateTable('sign_in_delays')
      .set({
        failures,
        last_failure_at: now,
        next_attempt_at: new Date(now.getTime() + delayAfter(failures)),
      })
      .where('throttle_key', '=', throttleKey)
      .execute();
  });

  return {
    async succeeded() {
      await ctx.db.deleteFrom('sign_in_delays').where('throttle_key', '=', throttleKey).execute();
      // A browser keeps its device token, or gets one; an API client is trusted by its address only.
      const device = !source.browser
        ? undefined
        : source.device?.startsWith(DEVICE_PREFIX) && source.device.length <= 100
          ? source.device
          : `${DEVICE_PREFIX}${randomBase62(32)}`;
      for (const key of sourceKeys(ctx, { ...source, device })) {
        await ctx.db
          .insertInto('sign_in_trust')
          .values({ account_key: accountKey, source_key: key, last_success_at: now })
          .onConflict((oc) => oc.columns(['account_key', 'source_key']).doUpdateSet({ last_success_at: now }))
          .execute();
      }
      return { device: device ?? null };
    },
  };
}

/** Forgets failures a quiet day has forgiven and sources unseen for long; run by the periodic cleaner. */
export async function purgeSignInFailures(ctx: AppContext): Promise<number> {
  const now = ctx.clock.now().getTime();
  const delays = await ctx.db
    .deleteFrom('sign_in_delays')
    .where('last_failure_at', '<=', new Date(now - FORGET_FAILURES_MS))
    .where('next_attempt_at', '<=', new Date(now))
    .executeTakeFirst();
  const trust = await ctx.db
    .deleteFrom('sign_in_trust')
    .where('last_success_at', '<=', new Date(now - TRUST_LIFETIME_MS))
    .executeTakeFirst();
  return Number(delays.numDeletedRows) + Number(trust.numDeletedRows);
}

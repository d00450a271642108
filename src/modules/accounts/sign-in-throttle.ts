import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { addressKey } from '../../lib/address-key.ts';
import { DAY, MINUTE, SECOND } from '../../lib/clock.ts';
import { derivedKey } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { randomBase62 } from '../../lib/ids.ts';

/**
 * The sign-in throttle, across routes (the API's POST /v1/auth/sessions and the /signin form both
 * sign in through users.signIn): decision 0031, which replaced decision 0023's.
 *
 * Per account and source. A source is the browser's device token when that device signed in to
 * the account before, else the client address (lib/address-key.ts: an IPv6 /64 is one address).
 * Its first SIGN_IN_FREE_FAILURES failures cost nothing; after that each further attempt from it
 * waits FIRST_DELAY_MS, doubling with every failure up to MAX_DELAY_MS (429 `rate_limited` with
 * Retry-After, the password not checked). So a stranger's guesses slow the stranger: the person,
 * from any other browser or address, signs in at once.
 *
 * Per account, a much higher ceiling for guessing spread over many sources: past
 * ACCOUNT_FREE_FAILURES failures in a day, the account keeps a pace (ACCOUNT_FIRST_DELAY_MS,
 * doubling with every further failure up to MAX_DELAY_MS). A source that has failed waits for it;
 * a source that has not is never refused, and its password is checked (so the person signs in,
 * even mid-attack, from anywhere they have not mistyped), but a wrong guess from it makes it wait
 * the account's pace from then on: each new source buys one guess per pace, not five.
 *
 * Keys are HMACs (of the normalised e-mail, of the device token, of the address): neither e-mails
 * that never signed up nor addresses are stored. The counts live in the database, so every
 * process shares them, and are kept for unknown e-mails too, so a 429 says nothing about whether
 * an account exists.
 */
export const SIGN_IN_FREE_FAILURES = 5;
export const FIRST_DELAY_MS = SECOND;
export const MAX_DELAY_MS = 15 * MINUTE;
/** Failures to one account, from every source, before the account keeps a pace. */
export const ACCOUNT_FREE_FAILURES = 100;
export const ACCOUNT_FIRST_DELAY_MS = SECOND;
/** A day without a failure forgets the failures. */
export const FORGET_FAILURES_MS = DAY;
/** A device that has not signed in for this long is a stranger again. */
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

/** The wait after the given number of failures in a row from one source, before its next attempt. */
export function delayAfter(failures: number): number {
  if (failures < SIGN_IN_FREE_FAILURES) return 0;
  return Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (failures - SIGN_IN_FREE_FAILURES));
}

/** The account's pace after the given number of failures from every source. */
export function accountDelayAfter(failures: number): number {
  if (failures < ACCOUNT_FREE_FAILURES) return 0;
  return Math.min(MAX_DELAY_MS, ACCOUNT_FIRST_DELAY_MS * 2 ** Math.min(30, failures - ACCOUNT_FREE_FAILURES));
}

function hmac(ctx: AppContext, value: string): string {
  const key = derivedKey(ctx.config.secretKey, 'sign-in throttle v2');
  return createHmac('sha256', key).update(value).digest('base64url');
}

function validDevice(device: string | undefined): device is string {
  return typeof device === 'string' && device.startsWith(DEVICE_PREFIX) && device.length <= 100;
}

export interface SignInTicket {
  /** Call when the password was right: forgets this source's failures and trusts its device. */
  succeeded(): Promise<{ device: string | null }>;
}

interface DelayRow {
  failures: number;
  last_failure_at: Date;
  next_attempt_at: Date;
}

function refusal(until: Date, now: Date): AppError {
  return new AppError(
    'rate_limited',
    `Too many failed sign-ins to this account: try again after ${until.toISOString()}`,
    { retry_after: Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000)) },
  );
}

/**
 * Counts this sign-in as a failure of its source and of the account before the password is
 * checked (so that concurrent guesses cannot all pass the count), and refuses it while its source
 * must wait. Answers the ticket to call when the password turns out right.
 */
export async function countSignInAttempt(
  ctx: AppContext,
  normalizedEmail: string,
  source: SignInSource,
): Promise<SignInTicket> {
  const accountKey = hmac(ctx, `account:${normalizedEmail}`);
  const now = ctx.clock.now();
  const deviceKey = validDevice(source.device) ? hmac(ctx, `device:${source.device}`) : null;
  const trustedDevice =
    deviceKey !== null &&
    (await ctx.db
      .selectFrom('sign_in_trust')
      .select('source_key')
      .where('account_key', '=', accountKey)
      .where('source_key', '=', deviceKey)
      .where('last_success_at', '>', new Date(now.getTime() - TRUST_LIFETIME_MS))
      .executeTakeFirst()) !== undefined;
  // A device token is the source only once it signed in: one made up would be a fresh source.
  const sourceKey = trustedDevice ? deviceKey : hmac(ctx, `address:${addressKey(source.address)}`);
  const sourceThrottle = `${accountKey}|${sourceKey}`;
  const accountThrottle = `${accountKey}|account`;

  await ctx.db.transaction().execute(async (trx) => {
    const lock = async (key: string): Promise<DelayRow> => {
      await trx
        .insertInto('sign_in_delays')
        .values({ throttle_key: key, failures: 0, last_failure_at: now, next_attempt_at: now })
        .onConflict((oc) => oc.column('throttle_key').doNothing())
        .execute();
      const row = await trx
        .selectFrom('sign_in_delays')
        .select(['failures', 'last_failure_at', 'next_attempt_at'])
        .where('throttle_key', '=', key)
        .forUpdate()
        .executeTakeFirstOrThrow();
      const forgotten = row.last_failure_at.getTime() <= now.getTime() - FORGET_FAILURES_MS;
      return forgotten ? { ...row, failures: 0 } : row;
    };
    // Always the account first, then the source: concurrent attempts lock in one order.
    const account = await lock(accountThrottle);
    const own = await lock(sourceThrottle);
    const paced = account.failures >= ACCOUNT_FREE_FAILURES && !trustedDevice;
    // Past the ceiling, a source that has failed keeps the account's pace too; one that has not is let through.
    const until =
      paced && own.failures > 0 && account.next_attempt_at > own.next_attempt_at
        ? account.next_attempt_at
        : own.next_attempt_at;
    if (until > now) throw refusal(until, now);
    const accountFailures = account.failures + 1;
    const accountWait = accountDelayAfter(accountFailures);
    const ownFailures = own.failures + 1;
    const ownWait = Math.max(delayAfter(ownFailures), paced ? accountWait : 0);
    const save = (key: string, failures: number, waitMs: number) =>
      trx
        .updateTable('sign_in_delays')
        .set({ failures, last_failure_at: now, next_attempt_at: new Date(now.getTime() + waitMs) })
        .where('throttle_key', '=', key)
        .execute();
    await save(accountThrottle, accountFailures, accountWait);
    await save(sourceThrottle, ownFailures, ownWait);
  });

  return {
    async succeeded() {
      await ctx.db.deleteFrom('sign_in_delays').where('throttle_key', '=', sourceThrottle).execute();
      // The attempt counted against the account beforehand was not a failure after all.
      await ctx.db
        .updateTable('sign_in_delays')
        .set((eb) => ({ failures: sql<number>`GREATEST(${eb.ref('failures')} - 1, 0)` }))
        .where('throttle_key', '=', accountThrottle)
        .execute();
      // A browser keeps its device token, or gets one, trusted from now on; an API client has none.
      const device = !source.browser
        ? undefined
        : validDevice(source.device)
          ? source.device
          : `${DEVICE_PREFIX}${randomBase62(32)}`;
      if (device !== undefined) {
        await ctx.db
          .insertInto('sign_in_trust')
          .values({
            account_key: accountKey,
            source_key: hmac(ctx, `device:${device}`),
            last_success_at: now,
          })
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

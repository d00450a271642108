import { sql } from 'kysely';
import type { AppContext, Trx } from '../../context.ts';
import { bareHost, resolveName } from '../../delivery/guard.ts';
import { addressKey } from '../../lib/address-key.ts';
import { MINUTE } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';

/**
 * The one budget of requests Waybill sends because someone asked it to (issue 22 item 5, decisions
 * 0028 and 0032): the App Store's submission checks and "Check my events URL", an app-event
 * message's test and replay, an endpoint's test send, and delivery replays. Scheduled deliveries
 * are not counted: they follow events, not requests. Each request spends from two budgets of the
 * same window:
 *
 * - the account's, OUTBOUND_SENDS_PER_ACCOUNT: a person for the developer routes; for an endpoint
 *   the company, whoever in it asks (its merchant accounts and app installations included), so
 *   that making merchant accounts or installing apps adds no budget;
 * - each destination address's, across every account, OUTBOUND_SENDS_PER_HOST: the addresses the
 *   URL's host resolves to (the guard's resolver, pinned for the connection that follows), an IPv6
 *   address by its /64 (lib/address-key.ts). One machine named by several names, or by a name and
 *   its address, is one destination.
 *
 * Windows are fixed (aligned to OUTBOUND_WINDOW_MS on the clock). The counts live in the database,
 * so every process spends from the same budget. Over any budget the request is refused, 429
 * `rate_limited` with Retry-After (the end of the window), before anything is sent or changed, and
 * spends nothing.
 */
export const OUTBOUND_WINDOW_MS = 10 * MINUTE;
export const OUTBOUND_SENDS_PER_ACCOUNT = 60;
export const OUTBOUND_SENDS_PER_HOST = 120;

/** Whose budget a request spends: a person, or the company of a key or token. */
export type OutboundAccount = { kind: 'user'; id: string } | { kind: 'company'; id: string };

/**
 * The account of an endpoint-scoped access: its company, whether the key is the company's, a
 * merchant account's or an app installation's. Each of those is made at will by the company's
 * owner; a budget of their own would multiply the company's.
 */
export function ownerAccount(access: { tenantId: string }): OutboundAccount {
  return { kind: 'company', id: access.tenantId };
}

/** The host a URL names, lower case, without the port: one machine, whichever port it listens on. */
export function targetHost(url: string): string | null {
  if (!URL.canParse(url)) return null;
  const host = bareHost(new URL(url).hostname);
  return host === '' ? null : host;
}

/**
 * The destination budgets a request to this host spends: one per address it resolves to (IPv6 by
 * /64), or the name itself when it resolves to none (nothing will connect; the name still counts).
 */
async function destinationSubjects(
  ctx: AppContext,
  host: string,
): Promise<{ subject: string; shown: string }[]> {
  const addresses = await resolveName(ctx, host, { pin: true });
  if (addresses.length === 0) return [{ subject: `host:${host}`, shown: host }];
  const keys = [...new Set(addresses.map(addressKey))].sort();
  return keys.map((key) => ({ subject: `address:${key}`, shown: key }));
}

export interface OutboundSpend {
  account: OutboundAccount;
  /** Where the requests go; null when they go nowhere by address (a `waybill listen` connection). */
  url: string | null;
  /** How many requests (a submission check sends two). */
  sends?: number;
}

async function spend(trx: Trx, subject: string, windowStart: Date, sends: number): Promise<number> {
  const row = await trx
    .insertInto('outbound_budget')
    .values({ subject, window_start: windowStart, sends })
    .onConflict((oc) =>
      oc.columns(['subject', 'window_start']).doUpdateSet({ sends: sql`outbound_budget.sends + ${sends}` }),
    )
    .returning('sends')
    .executeTakeFirstOrThrow();
  return row.sends;
}

/**
 * Spends `sends` from the account's and each destination address's budgets of the current window, or
 * refuses with 429 `rate_limited` (Retry-After: the end of the window) and spends nothing.
 */
export async function spendOutbound(ctx: AppContext, request: OutboundSpend): Promise<void> {
  const sends = request.sends ?? 1;
  const now = ctx.clock.now().getTime();
  const windowStart = new Date(now - (now % OUTBOUND_WINDOW_MS));
  const retryAfter = Math.max(1, Math.ceil((windowStart.getTime() + OUTBOUND_WINDOW_MS - now) / 1000));
  const host = request.url === null ? null : targetHost(request.url);
  // Resolved before the transaction: no lookup holds a connection to the database.
  const destinations = host === null ? [] : await destinationSubjects(ctx, host);
  await ctx.db.transaction().execute(async (trx) => {
    const accountSends = await spend(
      trx,
      `account:${request.account.kind}:${request.account.id}`,
      windowStart,
      sends,
    );
    const refuse = (whose: string, limit: number) => {
      const error = new AppError(
        'rate_limited',
        `Waybill sent too many requests ${whose}: at most ${limit} every ${OUTBOUND_WINDOW_MS / MINUTE} minutes; try again in ${retryAfter} s`,
        { retry_after: retryAfter },
      );
      error.retryAfter = retryAfter;
      return error;
    };
    // Thrown inside the transaction: it rolls back, so a refused request spends nothing.
    if (accountSends > OUTBOUND_SENDS_PER_ACCOUNT)
      throw refuse('for this account', OUTBOUND_SENDS_PER_ACCOUNT);
    for (const destination of destinations) {
      const destinationSends = await spend(trx, destination.subject, windowStart, sends);
      if (destinationSends > OUTBOUND_SENDS_PER_HOST)
        throw refuse(`to ${destination.shown}`, OUTBOUND_SENDS_PER_HOST);
    }
  });
}

/** Forgets windows that have ended; run by the periodic cleaner. */
export async function purgeOutboundBudget(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .deleteFrom('outbound_budget')
    .where('window_start', '<=', new Date(ctx.clock.now().getTime() - OUTBOUND_WINDOW_MS))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

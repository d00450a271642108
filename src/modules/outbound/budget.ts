import { sql } from 'kysely';
import type { AppContext, Trx } from '../../context.ts';
import { MINUTE } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';

/**
 * The one budget of requests Waybill sends because someone asked it to (issue 22 item 5, decision
 * 0028): the App Store's submission checks and "Check my events URL", an app-event message's test
 * and replay, an endpoint's test send, and delivery replays. Scheduled deliveries are not counted:
 * they follow events, not requests. Each request spends from two budgets of the same window:
 *
 * - the account's (a person for the developer routes; the owner of the key or token for an
 *   endpoint: a company, a merchant or an app installation), OUTBOUND_SENDS_PER_ACCOUNT;
 * - the target host's, across every account, OUTBOUND_SENDS_PER_HOST: a host named by many
 *   accounts is not sent more than that, however many accounts name it.
 *
 * Windows are fixed (aligned to OUTBOUND_WINDOW_MS on the clock). Both counts live in the database,
 * so every process spends from the same budget. Over either budget the request is refused, 429
 * `rate_limited` with Retry-After (the end of the window), before anything is sent or changed, and
 * spends nothing.
 */
export const OUTBOUND_WINDOW_MS = 10 * MINUTE;
export const OUTBOUND_SENDS_PER_ACCOUNT = 60;
export const OUTBOUND_SENDS_PER_HOST = 120;

export interface OutboundBudgetTable {
  /** `account:<kind>:<id>` or `host:<name>`. */
  subject: string;
  window_start: Date;
  sends: number;
}

export interface OutboundTables {
  outbound_budget: OutboundBudgetTable;
}

/** Whose budget a request spends: a person, or the owner of a key or token. */
export type OutboundAccount =
  | { kind: 'user'; id: string }
  | { kind: 'company' | 'merchant' | 'installation'; id: string };

/** The owner of an endpoint-scoped access: the installation, the merchant or the company. */
export function ownerAccount(access: {
  tenantId: string;
  customerAccountId: string | null;
  installationId: string | null;
}): OutboundAccount {
  if (access.installationId) return { kind: 'installation', id: access.installationId };
  if (access.customerAccountId) return { kind: 'merchant', id: access.customerAccountId };
  return { kind: 'company', id: access.tenantId };
}

/** The host a URL names, lower case, without the port: one machine, whichever port it listens on. */
export function targetHost(url: string): string | null {
  if (!URL.canParse(url)) return null;
  const host = new URL(url).hostname.toLowerCase();
  return host === '' ? null : host.replace(/\.$/, '');
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
 * Spends `sends` from the account's and the target host's budgets of the current window, or
 * refuses with 429 `rate_limited` (Retry-After: the end of the window) and spends nothing.
 */
export async function spendOutbound(ctx: AppContext, request: OutboundSpend): Promise<void> {
  const sends = request.sends ?? 1;
  const now = ctx.clock.now().getTime();
  const windowStart = new Date(now - (now % OUTBOUND_WINDOW_MS));
  const retryAfter = Math.max(1, Math.ceil((windowStart.getTime() + OUTBOUND_WINDOW_MS - now) / 1000));
  const host = request.url === null ? null : targetHost(request.url);
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
    if (host !== null) {
      const hostSends = await spend(trx, `host:${host}`, windowStart, sends);
      if (hostSends > OUTBOUND_SENDS_PER_HOST) throw refuse(`to ${host}`, OUTBOUND_SENDS_PER_HOST);
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

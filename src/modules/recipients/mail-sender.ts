import { type ExpressionBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import type { Database } from '../../db/schema.ts';
import type { BackgroundJob } from '../../jobs.ts';
import { addMs, HOUR, MINUTE, SECOND } from '../../lib/clock.ts';
import { eachAtMost } from '../../lib/concurrency.ts';
import { FROM_ADDRESS, storeInOutbox } from '../mail/outbox.ts';
import { lookOfCompany } from './branding.ts';
import type { Language } from './language.ts';
import { milestoneMail } from './mail-content.ts';
import type { Milestone } from './milestones.ts';
import { trackingUrl } from './tokens.ts';

/** Waits after the 1st, 2nd, ... failed attempt; after the last the e-mail is `failed`. */
export const RETRY_SCHEDULE_MS = [
  30 * SECOND,
  2 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  6 * HOUR,
  12 * HOUR,
  24 * HOUR,
];
/** How long a claim lasts: a sender that dies leaves rows that are claimed again after it. */
const LEASE_MS = 2 * MINUTE;
const BATCH = 50;

type Row = {
  id: string;
  tenant_id: string;
  shipment_id: string;
  livemode: boolean;
  event: string;
  to_address: string | null;
  address_hash: string;
  language: string;
  attempts: number;
  unsubscribe_token: string;
  created_at: Date;
};

/**
 * Claims due e-mails with a lease. No row lock is taken on the read (Citus runs no FOR UPDATE over
 * several shards): the lease is a compare-and-set, since the UPDATE checks the row is still free
 * once it holds its lock, so two senders racing for a row give it to one. No lock is held while sending.
 */
async function claim(ctx: AppContext, now: Date): Promise<Row[]> {
  const leased = addMs(now, LEASE_MS);
  const free = (eb: ExpressionBuilder<Database, 'recipient_notifications'>) =>
    eb.and([
      eb('status', '=', 'queued'),
      eb('next_attempt_at', '<=', now),
      eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]),
    ]);
  const due = await ctx.db
    .selectFrom('recipient_notifications')
    .select(['tenant_id', 'id'])
    .where(free)
    // A shipment's milestones in the order they happened.
    .orderBy('next_attempt_at')
    .orderBy('created_at')
    .orderBy('id')
    .limit(BATCH)
    .execute();
  if (due.length === 0) return [];
  const rows: Row[] = [];
  for (const tenantId of new Set(due.map((row) => row.tenant_id))) {
    const ids = due.filter((row) => row.tenant_id === tenantId).map((row) => row.id);
    rows.push(
      ...(await ctx.db
        .updateTable('recipient_notifications')
        .set({ locked_until: leased, attempts: sql`attempts + 1` })
        .where('tenant_id', '=', tenantId)
        .where('id', 'in', ids)
        .where(free)
        .returning([
          'id',
          'tenant_id',
          'shipment_id',
          'livemode',
          'event',
          'to_address',
          'address_hash',
          'language',
          'attempts',
          'unsubscribe_token',
          'created_at',
        ])
        .execute()),
    );
  }
  // RETURNING comes in no particular order: a shipment's milestones go in the order they happened.
  return rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1));
}

type Transport = { sendMail(mail: Record<string, unknown>): Promise<unknown>; close(): void };

/** E-mails of one batch sent at once, each over a connection the batch keeps open. */
const SENDS_AT_ONCE = 4;

/**
 * A pooled transport for one batch: a connection per message cost 130 ms on the local SMTP server
 * (its greeting, EHLO and QUIT each time), so 1,000 milestones took minutes to mail; the pool keeps
 * SENDS_AT_ONCE connections for the batch and closes them with it.
 */
async function openTransport(ctx: AppContext): Promise<Transport | null> {
  if (!ctx.config.smtpUrl) return null;
  const { default: nodemailer } = await import('nodemailer');
  return nodemailer.createTransport({
    url: ctx.config.smtpUrl,
    pool: true,
    maxConnections: SENDS_AT_ONCE,
  } as Parameters<typeof nodemailer.createTransport>[0]) as unknown as Transport;
}

type Outcome = {
  status?: 'sent' | 'failed' | 'suppressed';
  reason?: string | null;
  sent_at?: Date;
  to_address?: null;
  next_attempt_at?: Date;
};

async function finish(ctx: AppContext, row: Row, set: Outcome): Promise<void> {
  await ctx.db
    .updateTable('recipient_notifications')
    .set({ ...set, locked_until: null })
    .where('tenant_id', '=', row.tenant_id)
    .where('id', '=', row.id)
    // An erasure in between removed it or took the address: nothing to write back then.
    .where('status', '=', 'queued')
    .execute();
}

/** Sends one claimed e-mail: SMTP for a live shipment, the outbox for a test one (or with no SMTP). */
async function sendOne(ctx: AppContext, transport: Transport | null, row: Row, now: Date): Promise<void> {
  if (!row.to_address) return finish(ctx, row, { status: 'suppressed', reason: 'erased' });
  const unsubscribed = await ctx.db
    .selectFrom('recipient_unsubscribes')
    .select('address_hash')
    .where('tenant_id', '=', row.tenant_id)
    .where('address_hash', '=', row.address_hash)
    .executeTakeFirst();
  if (unsubscribed)
    return finish(ctx, row, { status: 'suppressed', reason: 'unsubscribed', to_address: null });
  const [token, look] = await Promise.all([
    ctx.db
      .selectFrom('tracking_tokens')
      .select('token')
      .where('tenant_id', '=', row.tenant_id)
      .where('shipment_id', '=', row.shipment_id)
      .executeTakeFirst(),
    lookOfCompany(ctx.db, row.tenant_id),
  ]);
  if (!token) return finish(ctx, row, { status: 'suppressed', reason: 'no_tracking_link', to_address: null });
  const mail = milestoneMail({
    language: row.language as Language,
    look,
    milestone: row.event as Milestone,
    trackingUrl: trackingUrl(ctx.config.webUrl, token.token),
    unsubscribeUrl: `${ctx.config.webUrl}/u/${row.unsubscribe_token}`,
  });
  const outbox = { to: [row.to_address], subject: mail.subject, text: mail.text };
  if (!row.livemode || !transport) {
    // A test shipment's mail, or any without an SMTP server: the outbox page shows it.
    await storeInOutbox(ctx.db, outbox, now, null);
    return finish(ctx, row, {
      status: 'sent',
      reason: row.livemode ? 'outbox' : 'test_mode_outbox',
      sent_at: now,
      to_address: null,
    });
  }
  try {
    await transport.sendMail({
      from: { name: look.name, address: FROM_ADDRESS },
      to: row.to_address,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
      headers: mail.headers,
    });
  } catch (err) {
    const reason = `smtp: ${(err as { responseCode?: number }).responseCode ?? (err as Error).message}`.slice(
      0,
      200,
    );
    const wait = RETRY_SCHEDULE_MS[row.attempts - 1];
    ctx.log.warn({ notification: row.id, attempts: row.attempts, reason }, 'recipient e-mail not sent yet');
    if (wait === undefined) return finish(ctx, row, { status: 'failed', reason, to_address: null });
    return finish(ctx, row, { reason, next_attempt_at: addMs(now, wait) });
  }
  await finish(ctx, row, { status: 'sent', reason: null, sent_at: now, to_address: null });
}

/**
 * The queue's worker step: claims the e-mails due now (the injected clock) and sends them. A
 * failure reschedules the e-mail (RETRY_SCHEDULE_MS) and moves nothing else.
 */
export async function sendDueNotifications(ctx: AppContext): Promise<number> {
  let sent = 0;
  for (;;) {
    const now = ctx.clock.now();
    const rows = await claim(ctx, now);
    if (rows.length === 0) return sent;
    const transport = rows.some((row) => row.livemode) ? await openTransport(ctx) : null;
    try {
      // Shipments at once; each shipment's milestones one after another, in the order they happened.
      const byShipment = Map.groupBy(rows, (row) => row.shipment_id);
      await eachAtMost([...byShipment.values()], SENDS_AT_ONCE, async (own) => {
        for (const row of own) await sendOne(ctx, transport, row, now);
      });
    } finally {
      transport?.close();
    }
    sent += rows.length;
    if (rows.length < BATCH) return sent;
  }
}

/** Runs with the worker (src/worker.ts): every second, whatever is due. */
export const recipientMailJob: BackgroundJob = {
  name: 'recipient-mail',
  everyMs: SECOND,
  run: sendDueNotifications,
};

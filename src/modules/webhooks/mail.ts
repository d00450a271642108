import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';

export interface Mail {
  to: string[];
  subject: string;
  text: string;
}

const FROM = 'Waybill <no-reply@waybill.invalid>';

/**
 * Sends e-mail over WAYBILL_SMTP_URL; without one, keeps it in the outbox shown at /dev/mailbox.
 * Failures are logged, never thrown: a missing e-mail must not undo the change it reports.
 */
export async function sendMail(ctx: AppContext, mail: Mail): Promise<void> {
  if (mail.to.length === 0) return;
  const now = ctx.clock.now();
  if (!ctx.config.smtpUrl) {
    await storeInOutbox(ctx.db, mail, now, null);
    return;
  }
  // Loaded with the first e-mail sent over SMTP: a process that sends none (a worker, mostly) never
  // loads its 40 modules.
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport(ctx.config.smtpUrl);
  try {
    await transport.sendMail({ from: FROM, to: mail.to, subject: mail.subject, text: mail.text });
    await storeInOutbox(ctx.db, mail, now, now);
  } catch (err) {
    ctx.log.error({ err }, 'e-mail not sent');
    await storeInOutbox(ctx.db, mail, now, null, 'smtp_failed');
  } finally {
    transport.close();
  }
}

async function storeInOutbox(
  db: Db,
  mail: Mail,
  now: Date,
  sentAt: Date | null,
  error?: string,
): Promise<void> {
  await db
    .insertInto('mail_outbox')
    .values({
      id: newId('mail'),
      recipients: JSON.stringify(mail.to),
      subject: mail.subject,
      body: mail.text,
      created_at: now,
      sent_at: sentAt,
      error: error ?? null,
    })
    .execute();
}

/** The people told when an endpoint is disabled: its creator, and the owners or the merchant's admins. */
export async function endpointContacts(db: Db, endpointId: string): Promise<string[]> {
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .select(['tenant_id', 'customer_account_id', 'created_by'])
    .where('id', '=', endpointId)
    .executeTakeFirst();
  if (!endpoint) return [];
  let admins = db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .select('users.email')
    .where('memberships.tenant_id', '=', endpoint.tenant_id);
  admins = endpoint.customer_account_id
    ? admins
        .where('memberships.customer_account_id', '=', endpoint.customer_account_id)
        .where('memberships.role', '=', 'merchant_admin')
    : admins.where('memberships.role', '=', 'owner');
  const emails = (await admins.execute()).map((row) => row.email);
  if (endpoint.created_by) {
    const creator = await db
      .selectFrom('users')
      .select('email')
      .where('id', '=', endpoint.created_by)
      .executeTakeFirst();
    if (creator) emails.unshift(creator.email);
  }
  return [...new Set(emails)];
}

export async function mailEndpointDisabled(ctx: AppContext, endpointId: string): Promise<void> {
  const endpoint = await ctx.db
    .selectFrom('webhook_endpoints')
    .select(['url', 'livemode'])
    .where('id', '=', endpointId)
    .executeTakeFirst();
  if (!endpoint) return;
  const link = `${ctx.config.webUrl}/dashboard/webhooks/${endpointId}`;
  const to = await endpointContacts(ctx.db, endpointId);
  // An app subscription's target belongs to no company: nobody there to tell.
  if (to.length === 0) return;
  await sendMail(ctx, {
    to,
    subject: 'Waybill disabled a webhook endpoint that failed for 3 days',
    text: [
      `The ${endpoint.livemode ? 'live' : 'test'} webhook endpoint ${endpoint.url} (${endpointId})`,
      'has not answered any message with a 2xx for 3 days, so Waybill disabled it and cancelled',
      'the messages that were waiting for it.',
      '',
      `Fix the receiver, then enable the endpoint and replay what failed: ${link}`,
    ].join('\n'),
  });
}

/** Spec 3.3: the 3-day disable is told by e-mail (a 410 is the receiver's own doing: no e-mail). */
export function registerDisabledMail(ctx: AppContext): void {
  ctx.deliveryHooks.endpointNews.push(async (news) => {
    for (const item of news) {
      if (item.kind !== 'disabled' || item.reason !== 'failing') continue;
      await mailEndpointDisabled(ctx, item.endpointId).catch((err: unknown) =>
        ctx.log.error({ err, endpointId: item.endpointId }, 'disable e-mail failed'),
      );
    }
  });
}

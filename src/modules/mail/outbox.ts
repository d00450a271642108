import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';

export interface Mail {
  to: string[];
  subject: string;
  text: string;
}

export const FROM_ADDRESS = 'no-reply@waybill.invalid';
const FROM = `Waybill <${FROM_ADDRESS}>`;

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

export async function storeInOutbox(
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

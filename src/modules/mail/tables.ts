/** What was sent, or kept to be read at /dev/mailbox when no SMTP server is set (outbox.ts). */
export interface MailOutboxTable {
  id: string;
  recipients: string[] | string;
  subject: string;
  body: string;
  created_at: Date;
  sent_at: Date | null;
  error: string | null;
}

export interface MailTables {
  mail_outbox: MailOutboxTable;
}

import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { sendMail } from '../mail/outbox.ts';

/** The people told when an endpoint is disabled: its creator, and the owners or the merchant's admins. */
export async function endpointContacts(db: Db, endpointId: string): Promise<string[]> {
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .select(['tenant_id', 'customer_account_id', 'created_by'])
    .where('id', '=', endpointId)
    // An app subscription's target belongs to the app: nobody in the company to tell.
    .where('kind', '<>', 'subscription')
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

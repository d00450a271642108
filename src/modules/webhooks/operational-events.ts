import { sql } from 'kysely';
import { type AppContext, runAfterCommit } from '../../context.ts';
import type { EndpointNews } from '../../delivery/context.ts';
import { notifyWorkers } from '../../delivery/fanout.ts';
import { FAILING_DISABLE_MS } from '../../delivery/schedule.ts';
import { newId } from '../../lib/ids.ts';
import { installationReceives } from '../oauth/installation-grants.ts';
import { buildEnvelope } from '../shipments/events.ts';
import type { OperationalEventType } from './operational-event-schemas.ts';

interface Subject {
  id: string;
  tenant_id: string;
  customer_account_id: string | null;
  installation_id: string | null;
  livemode: boolean;
  url: string;
}

/** The event's type and data (CONTRACT.md fixes both). */
function eventOf(news: EndpointNews, subject: Subject): { type: OperationalEventType; data: object } {
  const about = { endpoint_id: subject.id, url: subject.url };
  switch (news.kind) {
    case 'failing':
      return {
        type: 'webhook_endpoint.failing',
        data: {
          ...about,
          failing_since: news.failingSince.toISOString(),
          disables_at: new Date(news.failingSince.getTime() + FAILING_DISABLE_MS).toISOString(),
        },
      };
    case 'disabled':
      return {
        type: 'webhook_endpoint.disabled',
        data: { ...about, reason: news.reason, disabled_at: news.at.toISOString() },
      };
    case 'recovered':
      return {
        type: 'webhook_endpoint.recovered',
        data: {
          ...about,
          failing_since: news.failingSince.toISOString(),
          recovered_at: news.at.toISOString(),
        },
      };
  }
}

/**
 * Sends what the engine tells about an endpoint as signed operational events (issue 23): an event
 * row each (listed with the company's events), and one delivery to each other endpoint of the same
 * owner (company, merchant account or installation) and mode that subscribes to the type, never to
 * the endpoint it is about. Listeners and apps' events URLs are never the subject.
 */
export async function sendOperationalEvents(ctx: AppContext, news: readonly EndpointNews[]): Promise<void> {
  const subjects = await ctx.db
    .selectFrom('webhook_endpoints')
    .select(['id', 'tenant_id', 'customer_account_id', 'installation_id', 'livemode', 'url'])
    .where(
      'id',
      'in',
      news.map((n) => n.endpointId),
    )
    .where('kind', '=', 'endpoint')
    .execute();
  const byId = new Map(subjects.map((subject) => [subject.id, subject]));
  let queued = 0;
  await ctx.db.transaction().execute(async (trx) => {
    for (const item of news) {
      const subject = byId.get(item.endpointId);
      if (!subject) continue;
      const { type, data } = eventOf(item, subject);
      const recipients = await trx
        .selectFrom('webhook_endpoints as e')
        .select('e.id')
        .where('e.tenant_id', '=', subject.tenant_id)
        .where('e.livemode', '=', subject.livemode)
        .where('e.enabled', '=', true)
        .where('e.id', '<>', subject.id)
        .where('e.kind', 'in', ['endpoint', 'listener'])
        .where((eb) =>
          eb.and([
            subject.customer_account_id === null
              ? eb('e.customer_account_id', 'is', null)
              : eb('e.customer_account_id', '=', subject.customer_account_id),
            subject.installation_id === null
              ? eb('e.installation_id', 'is', null)
              : eb('e.installation_id', '=', subject.installation_id),
          ]),
        )
        .where((eb) => eb(eb.ref('e.event_types'), '@>', eb.val(JSON.stringify([type]))))
        // An installation's endpoint only while its grant is in force and allows the type
        // (webhooks:read): the rule of decision 0024, shared with the fan-out. The recipients'
        // installation is the subject's (above): named as a value, the grant is read once, not
        // joined row by row (which Citus refuses between shards).
        .where(installationReceives(sql.val(subject.installation_id), sql.val(type)))
        .execute();
      const eventId = newId('evt');
      const now = ctx.clock.now();
      await trx
        .insertInto('events')
        .values({
          id: eventId,
          tenant_id: subject.tenant_id,
          livemode: subject.livemode,
          type,
          shipment_id: null,
          customer_account_id: subject.customer_account_id,
          payload: buildEnvelope({
            id: eventId,
            type,
            tenantId: subject.tenant_id,
            livemode: subject.livemode,
            data,
            createdAt: now,
          }),
          created_at: now,
        })
        .execute();
      if (recipients.length === 0) continue;
      await trx
        .insertInto('webhook_deliveries')
        .values(
          recipients.map((recipient) => ({
            id: newId('dlv'),
            tenant_id: subject.tenant_id,
            endpoint_id: recipient.id,
            event_id: eventId,
            event_type: type,
            // The delivery reads its event's envelope (migration 0016).
            payload: null,
            status: 'pending' as const,
            attempt_count: 0,
            next_attempt_at: now,
            due_at: now,
            last_status_code: null,
            last_attempt_at: null,
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
      queued += recipients.length;
    }
    if (queued > 0) await notifyWorkers(ctx, trx);
  });
  if (queued > 0) runAfterCommit(ctx);
}

export function registerOperationalEvents(ctx: AppContext): void {
  ctx.deliveryHooks.endpointNews.push((news) => sendOperationalEvents(ctx, news));
}

import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { type AttemptOutcome, attemptDelivery } from '../../delivery/attempt.ts';
import { AppError } from '../../lib/errors.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { ownedAppRow } from '../apps/registry.ts';
import { spendOutbound } from '../outbound/budget.ts';
import { type Attempt, attemptsByDelivery, type Delivery, presentDelivery } from '../webhooks/deliveries.ts';
import { enqueueAppEvents, NO_COMPANY } from './enqueue.ts';

/** An app-event message as its developer sees it (spec 6.6): the delivery, its company and attempts. */
export interface EventMessage extends Omit<Delivery, 'endpoint_id'> {
  tenant_id: string;
  test: boolean;
  attempts: Attempt[];
}

/** An app event's delivery holds its envelope (it has no event row). */
function envelopeOf(payload: string | null): { tenant_id?: string; test?: boolean } {
  try {
    return JSON.parse(payload ?? '{}') as { tenant_id?: string; test?: boolean };
  } catch {
    return {};
  }
}

/**
 * The app's event messages with their target. An app's events target is a tenant of its own,
 * named by the app (decision 0074): every row is read in that one shard.
 */
function appEventDeliveries(ctx: AppContext, appId: string) {
  return ctx.db
    .selectFrom('webhook_deliveries')
    .innerJoin('webhook_endpoints', (join) =>
      join
        .onRef('webhook_endpoints.id', '=', 'webhook_deliveries.endpoint_id')
        .onRef('webhook_endpoints.tenant_id', '=', 'webhook_deliveries.tenant_id'),
    )
    .where('webhook_deliveries.tenant_id', '=', appId)
    .where('webhook_endpoints.app_id', '=', appId)
    .where('webhook_endpoints.kind', '=', 'app_events');
}

/** The latest app-event messages of the developer's app, newest first, each with its attempts. */
export async function listEventMessages(
  ctx: AppContext,
  developerId: string,
  appId: string,
  page: PageRequest = {},
): Promise<Page<EventMessage>> {
  await ownedAppRow(ctx, developerId, appId);
  const deliveries = await newestFirst(
    appEventDeliveries(ctx, appId).selectAll('webhook_deliveries'),
    'webhook_deliveries',
    page,
    (row) => row,
  );
  const attempts = await attemptsByDelivery(
    ctx,
    deliveries.data.map((row) => row.id),
  );
  return {
    next_cursor: deliveries.next_cursor,
    data: deliveries.data.map((row) => {
      const { endpoint_id: _target, ...delivery } = presentDelivery(row);
      const envelope = envelopeOf(row.payload);
      return {
        ...delivery,
        tenant_id: envelope.tenant_id ?? '',
        test: envelope.test === true,
        attempts: attempts.get(row.id) ?? [],
      };
    }),
  };
}

/** A suspended app receives nothing, replays and tests included (spec 3.2). */
async function requireNotSuspended(ctx: AppContext, developerId: string, appId: string) {
  const app = await ownedAppRow(ctx, developerId, appId);
  if (app.status === 'suspended') throw new AppError('app.suspended');
  return app;
}

/** Sends one of the app's messages again now (same webhook-id); counts as one more attempt. */
export async function replayEventMessage(
  ctx: AppContext,
  developerId: string,
  appId: string,
  deliveryId: string,
): Promise<AttemptOutcome> {
  await requireNotSuspended(ctx, developerId, appId);
  const found = await appEventDeliveries(ctx, appId)
    .select(['webhook_deliveries.id', 'webhook_endpoints.url'])
    .where('webhook_deliveries.id', '=', deliveryId)
    .executeTakeFirst();
  if (!found) throw new AppError('webhook_delivery.not_found');
  // One request on the developer's behalf (decision 0028).
  await spendOutbound(ctx, { account: { kind: 'user', id: developerId }, url: found.url });
  return attemptDelivery(ctx, deliveryId, 'replay', appId);
}

/**
 * A test app.uninstalled (test: true, no real company) sent now to the events URL, through the
 * engine: it is logged with its attempt like any message, and the receiver's answer comes back.
 */
export async function sendTestAppEvent(
  ctx: AppContext,
  developerId: string,
  appId: string,
): Promise<AttemptOutcome> {
  const app = await requireNotSuspended(ctx, developerId, appId);
  // One request on the developer's behalf, refused before the message is made (decision 0028).
  await spendOutbound(ctx, { account: { kind: 'user', id: developerId }, url: app.events_url });
  return sendTestAppEventToApp(ctx, appId);
}

/** The same without the ownership check, for the service's own checks (store submissions). */
export async function sendTestAppEventToApp(ctx: AppContext, appId: string): Promise<AttemptOutcome> {
  const now = ctx.clock.now();
  const [deliveryId] = await ctx.db.transaction().execute((trx) =>
    enqueueAppEvents(
      ctx,
      trx,
      [
        {
          appId,
          type: 'app.uninstalled',
          tenantId: NO_COMPANY,
          test: true,
          data: {
            installation_id: 'inst_test',
            customer_account_id: null,
            uninstalled_at: now.toISOString(),
          },
        },
      ],
      { due: false },
    ),
  );
  return attemptDelivery(ctx, deliveryId as string, 'test', appId);
}

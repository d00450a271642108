import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { runAfterCommit } from '../../context.ts';
import { attemptDelivery } from '../../delivery/attempt.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import { addMs, DAY } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { spendEndpointSend } from './budget.ts';
import { type Attempt, type DeliveryStatus, findVisibleDelivery, getDelivery } from './deliveries.ts';
import { findVisibleEndpoint, updateEndpoint } from './endpoints.ts';

/** Spec section 8: bulk replay takes the failed (and cancelled) deliveries of the last 7 days. */
export const BULK_REPLAY_WINDOW_MS = 7 * DAY;

function assertEnabled(endpoint: WebhookEndpointsTable): void {
  if (!endpoint.enabled) {
    throw new AppError('webhook_endpoint.disabled', 'Enable the endpoint before replaying its deliveries');
  }
}

/**
 * One more attempt of one delivery, now, with the same webhook-id (the receiver dedupes by it).
 * Answers the attempt just made and where the delivery stands.
 */
export async function replayDelivery(
  ctx: AppContext,
  access: TenantAccess,
  deliveryId: string,
): Promise<Attempt & { delivery_id: string; delivery_status: DeliveryStatus }> {
  requireScope(access, 'webhooks:write');
  const { endpoint } = await findVisibleDelivery(ctx, access, deliveryId);
  assertEnabled(endpoint);
  await spendEndpointSend(ctx, access, endpoint);
  await attemptDelivery(ctx, deliveryId, 'replay');
  const after = await getDelivery(ctx, access, deliveryId);
  const latest = after.attempts.at(-1);
  if (!latest) throw new Error(`the replay of ${deliveryId} left no attempt`);
  return { delivery_id: deliveryId, delivery_status: after.status, ...latest };
}

/**
 * Every failed or cancelled delivery of the endpoint created in the last 7 days goes back to the
 * worker's queue, due now. Test messages are left out: they are not events of the company
 * (their webhook-id has no row in events).
 */
export async function replayFailed(
  ctx: AppContext,
  access: TenantAccess,
  endpointId: string,
): Promise<{ replayed: number }> {
  requireScope(access, 'webhooks:write');
  const endpoint = await findVisibleEndpoint(ctx.db, access, endpointId);
  assertEnabled(endpoint);
  // One request from the budget, whatever it queues: the engine sends those at the endpoint's own
  // pace, and they are deliveries the endpoint was due anyway (decision 0028).
  await spendEndpointSend(ctx, access, endpoint);
  return queueFailedAgain(ctx, endpoint);
}

async function queueFailedAgain(
  ctx: AppContext,
  endpoint: WebhookEndpointsTable,
): Promise<{ replayed: number }> {
  const endpointId = endpoint.id;
  const now = ctx.clock.now();
  const result = await ctx.db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: now, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', 'in', ['failed', 'cancelled'])
    .where('created_at', '>=', addMs(now, -BULK_REPLAY_WINDOW_MS))
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('events')
          .select(sql`1`.as('one'))
          .whereRef('events.id', '=', 'webhook_deliveries.event_id'),
      ),
    )
    .executeTakeFirst();
  const replayed = Number(result.numUpdatedRows);
  if (replayed > 0) runAfterCommit(ctx);
  return { replayed };
}

/** The dashboard's one action after a disable: enable the endpoint, then queue what failed. */
export async function enableAndReplay(
  ctx: AppContext,
  access: TenantAccess,
  endpointId: string,
): Promise<{ replayed: number }> {
  requireScope(access, 'webhooks:write');
  // Spent before the endpoint is enabled, so that a refusal changes nothing.
  await spendEndpointSend(ctx, access, await findVisibleEndpoint(ctx.db, access, endpointId));
  await updateEndpoint(ctx, access, endpointId, { enabled: true });
  return queueFailedAgain(ctx, await findVisibleEndpoint(ctx.db, access, endpointId));
}

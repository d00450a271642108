import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { runAfterCommit } from '../../context.ts';
import { attemptDelivery } from '../../delivery/attempt.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import { addMs, DAY } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { assertInstallationReceives, installationReceives } from '../oauth/installation-grants.ts';
import { spendEndpointSend } from './budget.ts';
import { type Attempt, type DeliveryStatus, findVisibleDelivery, getDelivery } from './deliveries.ts';
import { updateEndpoint } from './endpoint-update.ts';
import { findVisibleEndpoint } from './endpoints.ts';

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
  const { endpoint, delivery } = await findVisibleDelivery(ctx, access, deliveryId);
  assertEnabled(endpoint);
  // An app's endpoint receives only what its grant allows now, replays included (decision 0024).
  await assertInstallationReceives(ctx.db, endpoint.installation_id, [delivery.event_type]);
  await spendEndpointSend(ctx, access, endpoint);
  await attemptDelivery(ctx, deliveryId, 'replay', endpoint.tenant_id);
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
  // A held installation's endpoint gets nothing (409); one with narrower scopes than it had gets
  // back only the types they allow now (decision 0024).
  await assertInstallationReceives(ctx.db, endpoint.installation_id, []);
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
    // Queued again as a message of its own: out of any shipment's line it was once in.
    .set({
      status: 'pending',
      next_attempt_at: now,
      due_at: now,
      locked_by: null,
      locked_until: null,
      line_shipment_id: null,
      line_seq: null,
      updated_at: now,
    })
    .where('tenant_id', '=', endpoint.tenant_id)
    .where('endpoint_id', '=', endpointId)
    .where('status', 'in', ['failed', 'cancelled'])
    .where('created_at', '>=', addMs(now, -BULK_REPLAY_WINDOW_MS))
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('events')
          .select(sql`1`.as('one'))
          .whereRef('events.id', '=', 'webhook_deliveries.event_id')
          .whereRef('events.tenant_id', '=', 'webhook_deliveries.tenant_id'),
      ),
    )
    .where(await typesReceived(ctx, endpoint, now))
    .executeTakeFirst();
  const replayed = Number(result.numUpdatedRows);
  if (replayed > 0) runAfterCommit(ctx);
  return { replayed };
}

/**
 * Which of the endpoint's deliveries its installation receives now (all, for a company's
 * endpoint), as a condition on `webhook_deliveries`. On Citus an installation's grant is read
 * once per type of the deliveries to replay, rather than row by row: the grant is a company's
 * row, which Citus joins only on the company.
 */
async function typesReceived(
  ctx: AppContext,
  endpoint: WebhookEndpointsTable,
  now: Date,
): Promise<RawBuilder<SqlBool>> {
  const installation = endpoint.installation_id;
  if (installation === null || !ctx.database.distributed)
    return installationReceives(sql.val(installation), sql.ref('webhook_deliveries.event_type'));
  const { rows } = await sql<{ event_type: string }>`
    SELECT DISTINCT d.event_type FROM webhook_deliveries d
    WHERE d.tenant_id = ${endpoint.tenant_id} AND d.endpoint_id = ${endpoint.id}
      AND d.status IN ('failed', 'cancelled')
      AND d.created_at >= ${addMs(now, -BULK_REPLAY_WINDOW_MS).toISOString()}::timestamptz`.execute(ctx.db);
  const received: string[] = [];
  for (const { event_type: type } of rows) {
    const { rows: answer } = await sql<{ ok: boolean }>`
      SELECT ${installationReceives(sql.val(installation), sql.val(type))} AS ok`.execute(ctx.db);
    if (answer[0]?.ok) received.push(type);
  }
  return sql<SqlBool>`webhook_deliveries.event_type = ANY (${received}::text[])`;
}

/** The dashboard's one action after a disable: enable the endpoint, then queue what failed. */
export async function enableAndReplay(
  ctx: AppContext,
  access: TenantAccess,
  endpointId: string,
): Promise<{ replayed: number }> {
  requireScope(access, 'webhooks:write');
  // Refused before anything changes: an installation that may receive nothing, then the budget.
  const endpoint = await findVisibleEndpoint(ctx.db, access, endpointId);
  await assertInstallationReceives(ctx.db, endpoint.installation_id, []);
  await spendEndpointSend(ctx, access, endpoint);
  await updateEndpoint(ctx, access, endpointId, { enabled: true });
  return queueFailedAgain(ctx, await findVisibleEndpoint(ctx.db, access, endpointId));
}

import type { AppContext } from '../../context.ts';
import { attemptDelivery } from '../../delivery/attempt.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { assertInstallationReceives } from '../oauth/installation-grants.ts';
import { spendEndpointSend } from './budget.ts';
import { eventTypesOf, findVisibleEndpoint } from './endpoints.ts';
import { exampleEnvelope, isEventType } from './event-types.ts';

export interface TestSendResult {
  delivery_id: string;
  status_code: number | null;
  response_body: string | null;
  duration_ms: number;
  error: string | null;
}

/**
 * The test message (spec 4.3): an envelope with `test: true` and an example shipment, sent now,
 * the receiver's answer returned at once. It is a delivery of its own that the worker never
 * claims (next_attempt_at null), so it shows in the log with its attempt. A disabled endpoint may
 * be tested: that is how its owner checks a fix before enabling it again.
 */
export async function sendTestMessage(
  ctx: AppContext,
  access: TenantAccess,
  endpointId: string,
  input: { event_type?: string },
): Promise<TestSendResult> {
  requireScope(access, 'webhooks:write');
  const endpoint = await findVisibleEndpoint(ctx.db, access, endpointId);
  const type = input.event_type ?? eventTypesOf(endpoint)[0] ?? 'shipment.status_changed';
  if (!isEventType(type)) {
    throw new AppError('webhook_endpoint.invalid_event_type', `${type} is not an event type`, {
      errors: [{ path: '/event_type', message: `unknown event type ${type}` }],
    });
  }
  // A suspended or held app's endpoint receives nothing, test messages included (decision 0024).
  await assertInstallationReceives(ctx.db, endpoint.installation_id, [type]);
  // One request on the owner's behalf, refused before the message is made (decision 0028).
  await spendEndpointSend(ctx, access, endpoint);
  const now = ctx.clock.now();
  const eventId = newId('evt');
  const deliveryId = newId('dlv');
  await ctx.db
    .insertInto('webhook_deliveries')
    .values({
      id: deliveryId,
      tenant_id: endpoint.tenant_id,
      endpoint_id: endpoint.id,
      event_id: eventId,
      event_type: type,
      payload: exampleEnvelope({
        id: eventId,
        type,
        tenantId: endpoint.tenant_id,
        livemode: endpoint.livemode,
        customerAccountId: endpoint.customer_account_id,
        at: now,
        test: true,
      }),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: null,
      last_status_code: null,
      last_attempt_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const result = await attemptDelivery(ctx, deliveryId, 'test', endpoint.tenant_id);
  return {
    delivery_id: deliveryId,
    status_code: result.status_code,
    response_body: result.response_body,
    duration_ms: result.duration_ms,
    error: result.error,
  };
}

import type { AppContext } from '../../context.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import type { BackgroundJob } from '../../jobs.ts';
import { addMs, MINUTE } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { Principal, TenantAccess } from '../accounts/access.ts';
import { requireScope } from '../accounts/access.ts';
import { newEndpointRow } from '../webhooks/endpoint-create.ts';
import {
  checkEventTypes,
  findVisibleEndpoint,
  presentEndpoint,
  type WebhookEndpoint,
} from '../webhooks/endpoints.ts';
import { SHIPMENT_EVENT_TYPES } from '../webhooks/event-types.ts';

/**
 * How long a listener outlives its connection: a command that reconnects within it (a laptop
 * waking, a network change) gets the deliveries that waited, with the same secret.
 */
export const LISTENER_GRACE_MS = 10 * MINUTE;
/** Listeners per owner (the company, or each of its merchants) at once: each holds a connection and a worker's attention. */
export const LISTENER_LIMIT = 10;
export const LISTENER_DESCRIPTION = 'listening from the command line';

/**
 * Only a test API key may listen: test events only, and no app token (an app's endpoints belong to
 * its installation). Checked on arrival, before the body is read.
 */
export function requireListenerAccess(principal: Principal | null): TenantAccess {
  if (principal?.kind !== 'api_token' || principal.access.livemode) {
    throw new AppError(
      'webhook_listener.test_mode_only',
      'Only a test API key (sk_test_...) may listen: a listener receives test events only',
    );
  }
  return principal.access;
}

export interface Listener extends WebhookEndpoint {
  secret: string;
}

/** Registers a listener: a test endpoint of kind 'listener' that forwards to the command's URL. */
export async function createListener(
  ctx: AppContext,
  access: TenantAccess,
  input: { forward_to: string; event_types?: string[] },
): Promise<Listener> {
  requireScope(access, 'webhooks:write');
  const eventTypes = input.event_types ? checkEventTypes(input.event_types) : [...SHIPMENT_EVENT_TYPES];
  const { row, secret } = newEndpointRow(ctx, access, {
    kind: 'listener',
    url: input.forward_to,
    description: LISTENER_DESCRIPTION,
    eventTypes,
  });
  await ctx.db.transaction().execute(async (trx) => {
    await trx.selectFrom('companies').select('id').where('id', '=', access.tenantId).forUpdate().execute();
    // Per owner, as the endpoint limit: a merchant's key fills the merchant's places, never the
    // company's (nor another merchant's).
    const { count } = await trx
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('tenant_id', '=', access.tenantId)
      .where('kind', '=', 'listener')
      .where((eb) =>
        access.customerAccountId
          ? eb('customer_account_id', '=', access.customerAccountId)
          : eb('customer_account_id', 'is', null),
      )
      .executeTakeFirstOrThrow();
    if (Number(count) >= LISTENER_LIMIT) {
      throw new AppError(
        'webhook_listener.limit_reached',
        `At most ${LISTENER_LIMIT} listeners at once; stop one, or wait for a stopped one to go`,
        { limit: LISTENER_LIMIT },
      );
    }
    await trx.insertInto('webhook_endpoints').values(row).execute();
  });
  return { ...presentEndpoint(ctx, { ...row, event_types: eventTypes }), secret };
}

/** The caller's listener; foreign, unknown and ordinary endpoints all answer 404. */
export async function findListener(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<WebhookEndpointsTable> {
  const row = await findVisibleEndpoint(ctx.db, access, id).catch((err: unknown) => {
    if (err instanceof AppError) return null;
    throw err;
  });
  if (row?.kind !== 'listener') throw new AppError('webhook_listener.not_found');
  return row;
}

/** Marks connected listeners as alive (their holder calls this now and then). */
export async function touchListeners(ctx: AppContext, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await ctx.db
    .updateTable('webhook_endpoints')
    .set({ listener_seen_at: ctx.clock.now() })
    .where('id', 'in', ids)
    .where('kind', '=', 'listener')
    .execute();
}

/**
 * Removes listeners not seen for the grace period, with their deliveries and attempts
 * (ON DELETE CASCADE): they were temporary. Any process may do it; the holder of a live
 * connection keeps touching its listener, so a live one is never removed.
 */
export async function sweepListeners(ctx: AppContext): Promise<number> {
  const cutoff = addMs(ctx.clock.now(), -LISTENER_GRACE_MS);
  const result = await ctx.db
    .deleteFrom('webhook_endpoints')
    .where('kind', '=', 'listener')
    .where('listener_seen_at', '<', cutoff)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Housekeeping: listeners whose command went away and did not come back within the grace period. */
export const listenerSweepJob: BackgroundJob = {
  name: 'webhook-listeners',
  everyMs: MINUTE,
  run: (ctx) => sweepListeners(ctx),
};

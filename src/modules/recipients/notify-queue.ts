import type { AppContext, StoredEvent, Trx } from '../../context.ts';
import { newId, randomBase62 } from '../../lib/ids.ts';
import { addressHash, maskAddress } from './addresses.ts';
import { type Milestone, milestoneOfStatus } from './milestones.ts';

/** What a milestone's e-mail needs of the shipment that reached it. */
export interface MilestoneOfShipment {
  tenantId: string;
  shipmentId: string;
  livemode: boolean;
  recipientEmail: string | null;
  milestone: Milestone;
  at: Date;
}

type ShipmentData = {
  status?: unknown;
  delayed?: unknown;
  shipment?: { id?: unknown; livemode?: unknown; recipient_email?: unknown };
};

/**
 * The milestone an event is, if any: a status move to picked_up, out_for_delivery, delivered or
 * exception; and `delayed`, which is the tracking module's `shipment.eta_changed` with
 * `delayed: true` (CONTRACT.md "Tracking"), from a PATCH of the estimate or a checkpoint that
 * carries one (its row holds the 2026-12-01 envelope: that type has no other version).
 */
export function milestoneOfEvent(event: StoredEvent): MilestoneOfShipment | null {
  if (event.type !== 'shipment.status_changed' && event.type !== 'shipment.eta_changed') return null;
  const data = (JSON.parse(event.payload) as { data?: ShipmentData }).data;
  const shipment = data?.shipment;
  if (!shipment || typeof shipment.id !== 'string') return null;
  const milestone =
    event.type === 'shipment.eta_changed'
      ? data?.delayed === true
        ? 'delayed'
        : null
      : typeof data?.status === 'string'
        ? milestoneOfStatus(data.status)
        : null;
  if (!milestone) return null;
  return {
    tenantId: event.tenantId,
    shipmentId: shipment.id,
    livemode: event.livemode,
    recipientEmail: typeof shipment.recipient_email === 'string' ? shipment.recipient_email : null,
    milestone,
    at: event.createdAt,
  };
}

/**
 * Queues the recipient's e-mail for a milestone, in the transaction that reached it: never sent
 * from here (the queue's worker sends it), once per milestone of a shipment at most (the unique
 * key), and only when the company chose that milestone. An address that unsubscribed is logged
 * as `suppressed`.
 */
export async function queueMilestoneMail(
  ctx: AppContext,
  trx: Trx,
  milestone: MilestoneOfShipment,
): Promise<void> {
  const address = milestone.recipientEmail?.trim();
  if (!address) return;
  const settings = await trx
    .selectFrom('recipient_settings')
    .select(['notifications_enabled', 'notification_events'])
    .where('tenant_id', '=', milestone.tenantId)
    .executeTakeFirst();
  if (!settings?.notifications_enabled) return;
  const events = (
    typeof settings.notification_events === 'string'
      ? JSON.parse(settings.notification_events)
      : settings.notification_events
  ) as string[];
  if (!events.includes(milestone.milestone)) return;
  const hash = addressHash(ctx.config.secretKey, address);
  const unsubscribed = await trx
    .selectFrom('recipient_unsubscribes')
    .select('address_hash')
    .where('tenant_id', '=', milestone.tenantId)
    .where('address_hash', '=', hash)
    .executeTakeFirst();
  await trx
    .insertInto('recipient_notifications')
    .values({
      id: newId('rnt'),
      tenant_id: milestone.tenantId,
      shipment_id: milestone.shipmentId,
      livemode: milestone.livemode,
      event: milestone.milestone,
      to_address: unsubscribed ? null : address,
      to_masked: maskAddress(address),
      address_hash: hash,
      language: 'en',
      status: unsubscribed ? 'suppressed' : 'queued',
      reason: unsubscribed ? 'unsubscribed' : null,
      // Due now: an event's time may run a millisecond ahead of the clock (moves in one instant).
      next_attempt_at: ctx.clock.now(),
      unsubscribe_token: randomBase62(24),
      created_at: milestone.at,
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'shipment_id', 'event']).doNothing())
    .execute();
}

/** The recipients' sink: every milestone among the events, queued in their transaction. */
export function registerRecipientNotifications(ctx: AppContext): void {
  ctx.eventSinks.push(async (trx, events) => {
    for (const event of events) {
      const milestone = milestoneOfEvent(event);
      if (milestone) await queueMilestoneMail(ctx, trx, milestone);
    }
  });
}

import type { AppContext, StoredEvent, Trx } from '../../context.ts';
import { newId } from '../../lib/ids.ts';

/** Version label of every payload (spec 9.1). */
export const API_VERSION = '2026-11-01';

export interface EnvelopeInput {
  type: string;
  tenantId: string;
  livemode: boolean;
  data: unknown;
  createdAt: Date;
  test?: boolean;
}

/** The envelope of spec 2.6, serialised once: these bytes are what is signed and sent. */
export function buildEnvelope(input: EnvelopeInput & { id: string }): string {
  return JSON.stringify({
    id: input.id,
    type: input.type,
    api_version: API_VERSION,
    created_at: input.createdAt.toISOString(),
    tenant_id: input.tenantId,
    livemode: input.livemode,
    ...(input.test ? { test: true } : {}),
    data: input.data,
  });
}

/**
 * Writes event rows in the caller's transaction and hands them to the sinks (the webhooks
 * fan-out), so an event and its deliveries commit or vanish together.
 */
export async function recordEvents(
  ctx: AppContext,
  trx: Trx,
  events: ReadonlyArray<EnvelopeInput & { shipmentId?: string | null; customerAccountId: string | null }>,
): Promise<StoredEvent[]> {
  const stored: StoredEvent[] = events.map((event) => {
    const id = newId('evt');
    return {
      id,
      type: event.type,
      tenantId: event.tenantId,
      livemode: event.livemode,
      customerAccountId: event.customerAccountId,
      payload: buildEnvelope({ ...event, id }),
      createdAt: event.createdAt,
    };
  });
  if (stored.length === 0) return stored;
  await trx
    .insertInto('events')
    .values(
      stored.map((event, i) => ({
        id: event.id,
        tenant_id: event.tenantId,
        livemode: event.livemode,
        type: event.type,
        shipment_id: events[i]?.shipmentId ?? null,
        customer_account_id: event.customerAccountId,
        payload: event.payload,
        created_at: event.createdAt,
      })),
    )
    .execute();
  for (const sink of ctx.eventSinks) await sink(trx, stored);
  return stored;
}

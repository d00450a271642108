import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { byTenant } from './by-tenant.ts';
import type { DeliveryContext, Trx } from './context.ts';

/** A stored event, handed to the fan-out inside the transaction that wrote it. */
export interface StoredEvent {
  id: string;
  type: string;
  tenantId: string;
  livemode: boolean;
  customerAccountId: string | null;
  /** Set for app events: the installation the event concerns. */
  installationId?: string | null;
  payload: string;
  /** The 2026-12-01 envelope where it is not `payload`: a target pinned to that version gets it. */
  latestPayload?: string | null;
  createdAt: Date;
}

/** Called in the transaction that wrote the events (the fan-out is one). */
export type EventSink = (trx: Trx, events: readonly StoredEvent[]) => Promise<void>;

/** The notification channel that wakes delivery workers in every process. */
export const WAKE_CHANNEL = 'waybill_webhook_deliveries';

/**
 * Names a context (one Waybill: a process, or one of several in a test) in its notifications, so
 * that its worker skips its own: the in-process wake-up got there first.
 */
const tags = new WeakMap<DeliveryContext, string>();
export function wakeTag(ctx: DeliveryContext): string {
  let tag = tags.get(ctx);
  if (!tag) {
    tag = randomUUID();
    tags.set(ctx, tag);
  }
  return tag;
}

/** In-process wake-ups (the worker of this process need not wait for the notification round trip). */
const localWakers = new WeakMap<DeliveryContext, Set<() => void>>();

export function onLocalWake(ctx: DeliveryContext, wake: () => void): () => void {
  let set = localWakers.get(ctx);
  if (!set) {
    set = new Set();
    localWakers.set(ctx, set);
  }
  set.add(wake);
  return () => set.delete(wake);
}

/**
 * One delivery row per event and matching endpoint (ARCHITECTURE.md step 1), in the event's own
 * transaction and in one INSERT ... SELECT, without the payload, which stays with the event
 * (migration 0016): enabled, same tenant and livemode, subscribed to the type, in scope (a company
 * endpoint gets every shipment of the company, a merchant endpoint only its account's), and not
 * belonging to a suspended app's installation; each filter on the envelope of its target's version,
 * and a row of a target pinned to 2026-12-01 marked to send its event's `latest_payload`
 * (migration 0097). The statement is the database function webhook_fan_out, planned once per connection.
 */
export async function fanOut(
  ctx: DeliveryContext,
  trx: Trx,
  events: readonly StoredEvent[],
): Promise<number> {
  if (events.length === 0) return 0;
  // On Citus, one call per company, each in its shard (decision 0074).
  const groups = ctx.database.distributed
    ? byTenant(events, (event) => event.tenantId)
    : [{ tenant: null, items: [...events] }];
  let inserted = 0;
  for (const group of groups) inserted += await fanOutGroup(ctx, trx, group.tenant, group.items);
  // Delivered at commit to every listening worker, in this process and others.
  if (inserted > 0) await notifyWorkers(ctx, trx);
  return inserted;
}

async function fanOutGroup(
  ctx: DeliveryContext,
  trx: Trx,
  tenant: string | null,
  events: readonly StoredEvent[],
): Promise<number> {
  const fn = tenant === null ? sql`webhook_fan_out(` : sql`webhook_fan_out_tenant(${tenant}::text, `;
  const result = await sql<{ inserted: number }>`
    SELECT ${fn}
      ${events.map((e) => e.id)}::text[],
      ${events.map((e) => e.type)}::text[],
      ${events.map((e) => e.tenantId)}::text[],
      ${events.map((e) => e.livemode)}::boolean[],
      ${events.map((e) => e.customerAccountId)}::text[],
      ${events.map((e) => e.latestPayload ?? null)}::text[],
      ${ctx.clock.now().toISOString()}::timestamptz
    ) AS inserted
  `.execute(trx);
  return Number(result.rows[0]?.inserted ?? 0);
}

/**
 * Wakes every listening worker, in this process and others, when the transaction commits. The
 * embedded database belongs to one process, whose workers the in-process wake-up reaches: no
 * statement for it there (PGlite runs statements one at a time, so each one counts).
 */
export async function notifyWorkers(ctx: DeliveryContext, trx: Trx): Promise<void> {
  if (ctx.database.engine === 'pglite') return;
  await sql`SELECT pg_notify(${WAKE_CHANNEL}, ${wakeTag(ctx)})`.execute(trx);
}

/** Hooks the delivery engine into the context: the fan-out sink and the after-commit wake-up. */
export function registerDeliveryEngine(
  ctx: DeliveryContext & { eventSinks: EventSink[]; afterCommitHooks: Array<() => void> },
): void {
  ctx.eventSinks.push(async (trx, events) => {
    await fanOut(ctx, trx, events);
  });
  ctx.afterCommitHooks.push(() => {
    for (const wake of localWakers.get(ctx) ?? []) wake();
  });
}

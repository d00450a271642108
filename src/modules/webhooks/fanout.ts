import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { AppContext, StoredEvent, Trx } from '../../context.ts';

/** The notification channel that wakes delivery workers in every process. */
export const WAKE_CHANNEL = 'waybill_webhook_deliveries';

/**
 * Names a context (one Waybill: a process, or one of several in a test) in its notifications, so
 * that its worker skips its own: the in-process wake-up got there first.
 */
const tags = new WeakMap<AppContext, string>();
export function wakeTag(ctx: AppContext): string {
  let tag = tags.get(ctx);
  if (!tag) {
    tag = randomUUID();
    tags.set(ctx, tag);
  }
  return tag;
}

/** In-process wake-ups (the worker of this process need not wait for the notification round trip). */
const localWakers = new WeakMap<AppContext, Set<() => void>>();

export function onLocalWake(ctx: AppContext, wake: () => void): () => void {
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
 * belonging to a suspended app's installation.
 */
export async function fanOut(ctx: AppContext, trx: Trx, events: readonly StoredEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const now = ctx.clock.now();
  const result = await sql`
    INSERT INTO webhook_deliveries
      (id, endpoint_id, event_id, event_type, payload, status, attempt_count, next_attempt_at, created_at, updated_at)
    SELECT
      -- dlv_ + 22 characters of [0-9A-Za-z] drawn from 256 random bits.
      'dlv_' || substr(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 22),
      -- No payload: the delivery reads its event's (migration 0016).
      e.id, ev.id, ev.type, NULL, 'pending', 0, ${now.toISOString()}::timestamptz,
      ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
    FROM unnest(
      ${events.map((e) => e.id)}::text[],
      ${events.map((e) => e.type)}::text[],
      ${events.map((e) => e.tenantId)}::text[],
      ${events.map((e) => e.livemode)}::boolean[],
      ${events.map((e) => e.customerAccountId)}::text[]
    ) AS ev(id, type, tenant_id, livemode, customer_account_id)
    JOIN webhook_endpoints e
      ON e.tenant_id = ev.tenant_id
      AND e.livemode = ev.livemode
      AND e.enabled
      AND e.event_types @> jsonb_build_array(ev.type)
      AND (e.customer_account_id IS NULL OR e.customer_account_id = ev.customer_account_id)
    WHERE e.installation_id IS NULL OR NOT EXISTS (
      SELECT 1 FROM installations i JOIN apps a ON a.id = i.app_id
      WHERE i.id = e.installation_id AND a.status = 'suspended'
    )
  `.execute(trx);
  const inserted = Number(result.numAffectedRows ?? 0);
  // Delivered at commit to every listening worker, in this process and others.
  if (inserted > 0) await notifyWorkers(ctx, trx);
  return inserted;
}

/**
 * Wakes every listening worker, in this process and others, when the transaction commits. The
 * embedded database belongs to one process, whose workers the in-process wake-up reaches: no
 * statement for it there (PGlite runs statements one at a time, so each one counts).
 */
export async function notifyWorkers(ctx: AppContext, trx: Trx): Promise<void> {
  if (ctx.database.engine === 'pglite') return;
  await sql`SELECT pg_notify(${WAKE_CHANNEL}, ${wakeTag(ctx)})`.execute(trx);
}

/** Hooks the delivery engine into the context: the fan-out sink and the after-commit wake-up. */
export function registerWebhookEngine(ctx: AppContext): void {
  ctx.eventSinks.push(async (trx, events) => {
    await fanOut(ctx, trx, events);
  });
  ctx.afterCommitHooks.push(() => {
    for (const wake of localWakers.get(ctx) ?? []) wake();
  });
}

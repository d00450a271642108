import type { Agent } from 'undici';
import { AppError } from '../lib/errors.ts';
import type { DeliveryContext, EndpointNews } from './context.ts';
import { Destinations } from './destinations/index.ts';
import { buildMessage, deliveryPayload, storedHeaders, withEchoesMasked } from './message.ts';
import { type FinishedAttempt, recordAttempts, type Trigger } from './record.ts';
import {
  DEADLINE_MS,
  guardedAgent,
  listenerTransport,
  responseText,
  type SendError,
  type SenderOptions,
} from './sender.ts';

export interface AttemptOutcome {
  delivery_id: string;
  status_code: number | null;
  response_body: string | null;
  duration_ms: number;
  error: SendError | null;
}

/** One keep-alive agent per context for attempts made outside the worker (replays and test sends). */
interface Sender {
  agent: Agent;
  options: SenderOptions;
  /** HTTPS through the agent, brokers through kept connections (destinations/). */
  destinations: Destinations;
}
const agents = new WeakMap<DeliveryContext, Sender>();

function newSender(ctx: DeliveryContext, options: SenderOptions): Sender {
  const agent = guardedAgent(ctx, options);
  return { agent, options, destinations: new Destinations(ctx, agent, options.deadlineMs ?? DEADLINE_MS) };
}

export function setSenderOptions(ctx: DeliveryContext, options: SenderOptions): void {
  agents.set(ctx, newSender(ctx, options));
}

function senderFor(ctx: DeliveryContext): Sender {
  let sender = agents.get(ctx);
  if (!sender) {
    sender = newSender(ctx, {});
    agents.set(ctx, sender);
  }
  return sender;
}

/** Closes the broker connections that replays and test sends opened (the process stops). */
export async function closeSenders(ctx: DeliveryContext): Promise<void> {
  await agents.get(ctx)?.destinations.close();
}

/** Hands what a record changed about endpoints to the capabilities' hooks, after its commit. */
export async function reportNews(ctx: DeliveryContext, news: readonly EndpointNews[]): Promise<void> {
  if (news.length === 0) return;
  for (const hook of ctx.deliveryHooks.endpointNews) {
    await hook(news).catch((err: unknown) =>
      ctx.log.error({ err, endpointIds: news.map((n) => n.endpointId) }, 'a hook on endpoint news failed'),
    );
  }
}

/**
 * Makes one attempt of a delivery now, through the guard, and records it. `replay` and `test` do
 * not touch the retry schedule: a successful replay succeeds the delivery, a failed one leaves it
 * as it was; a test delivery ends succeeded or failed. The webhook-id stays the event's id.
 */
export async function attemptDelivery(
  ctx: DeliveryContext,
  deliveryId: string,
  trigger: Trigger,
  /** The delivery's tenant (its endpoint's company, or an app's id): one shard on Citus. */
  tenantId: string,
): Promise<AttemptOutcome> {
  const row = await ctx.db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('delivery_targets as e', (join) =>
      join.onRef('e.id', '=', 'd.endpoint_id').onRef('e.tenant_id', '=', 'd.tenant_id'),
    )
    .select([
      'd.id',
      'd.tenant_id',
      'd.endpoint_id',
      'd.event_id',
      'd.event_type',
      deliveryPayload('d').as('payload'),
      'd.status',
      'd.attempt_count',
      'd.next_attempt_at',
      'e.kind',
      'e.url',
      'e.secret_sealed',
      'e.previous_secret_sealed',
      'e.previous_secret_expires_at',
      'e.headers_sealed',
    ])
    .where('d.id', '=', deliveryId)
    .where('d.tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw new AppError('webhook_delivery.not_found');
  const now = ctx.clock.now();
  const message = buildMessage(ctx, row, { ...row, id: row.endpoint_id }, now);
  const sender = senderFor(ctx);
  const result = withEchoesMasked(
    message,
    row.kind === 'listener'
      ? await listenerTransport(ctx)(row.endpoint_id, message, sender.options.deadlineMs ?? DEADLINE_MS)
      : await sender.destinations.send(message, sender.options.deadlineMs ?? DEADLINE_MS),
  );
  const finished: FinishedAttempt = {
    delivery: row,
    trigger,
    attemptedAt: now,
    headers: storedHeaders(message),
    result,
    targetKind: row.kind,
  };
  await reportNews(ctx, await recordAttempts(ctx, [finished]));
  const { response_head, ...rest } = result;
  return { delivery_id: row.id, ...rest, response_body: responseText(response_head) };
}

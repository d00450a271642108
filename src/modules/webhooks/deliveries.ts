import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { buildMessage, deliveryPayload } from '../../delivery/message.ts';
import { responseText } from '../../delivery/sender.ts';
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
} from '../../delivery/tables.ts';
import { AppError } from '../../lib/errors.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { endpointVisible, findVisibleEndpoint } from './endpoints.ts';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface Delivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  created_at: string;
  updated_at: string;
}

export interface Attempt {
  attempted_at: string;
  duration_ms: number;
  status_code: number | null;
  error: WebhookAttemptsTable['error'];
  response_body: string | null;
  trigger: WebhookAttemptsTable['trigger'];
}

export interface DeliveryDetail extends Delivery {
  /** What the receiver got (or will get): the headers of the latest attempt and the body signed. */
  message: { headers: Record<string, string>; body: string };
  attempts: Attempt[];
}

export function presentDelivery(row: WebhookDeliveriesTable): Delivery {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempt_count: row.attempt_count,
    next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
    last_status_code: row.last_status_code,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The attempts of a page of deliveries, oldest first, by delivery: one query for the page. */
export async function attemptsByDelivery(
  ctx: AppContext,
  deliveryIds: readonly string[],
): Promise<Map<string, Attempt[]>> {
  const byDelivery = new Map<string, Attempt[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const rows = await ctx.db
    .selectFrom('webhook_attempt_log')
    .selectAll()
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('attempted_at')
    .execute();
  for (const row of rows) {
    const list = byDelivery.get(row.delivery_id);
    if (list) list.push(presentAttempt(row));
    else byDelivery.set(row.delivery_id, [presentAttempt(row)]);
  }
  return byDelivery;
}

export function presentAttempt(row: WebhookAttemptsTable): Attempt {
  return {
    attempted_at: row.attempted_at.toISOString(),
    duration_ms: row.duration_ms,
    status_code: row.status_code,
    error: row.error,
    response_body: responseText(row.response_body),
    trigger: row.trigger,
  };
}

function headersOf(value: unknown): Record<string, string> {
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (!parsed || typeof parsed !== 'object') return {};
  return Object.fromEntries(Object.entries(parsed).map(([name, v]) => [name.toLowerCase(), String(v)]));
}

/** A delivery with its endpoint, if the caller may see the endpoint; otherwise 404. */
export async function findVisibleDelivery(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<{ delivery: WebhookDeliveriesTable & { payload: string }; endpoint: WebhookEndpointsTable }> {
  const delivery = await ctx.db
    .selectFrom('webhook_deliveries as d')
    .selectAll()
    .select(deliveryPayload('d').as('payload'))
    .where('id', '=', id)
    // By the caller's company too: one shard on Citus (another company's is not visible anyway).
    .where('tenant_id', '=', access.tenantId)
    .executeTakeFirst();
  const endpoint = delivery
    ? await ctx.db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('id', '=', delivery.endpoint_id)
        .where('tenant_id', '=', delivery.tenant_id)
        .executeTakeFirst()
    : undefined;
  if (!delivery || !endpoint || !endpointVisible(access, endpoint)) {
    throw new AppError('webhook_delivery.not_found');
  }
  return { delivery, endpoint };
}

/**
 * An endpoint's deliveries, newest first, optionally of one status; with no endpoint, those of every
 * endpoint the caller sees (the same rule as endpointVisible: company, mode, merchant, installation).
 */
export async function listDeliveries(
  ctx: AppContext,
  access: TenantAccess,
  endpointId: string | null,
  filters: PageRequest & { status?: DeliveryStatus },
): Promise<Page<Delivery>> {
  requireScope(access, 'webhooks:read');
  let query = ctx.db.selectFrom('webhook_deliveries').selectAll();
  if (endpointId !== null) {
    await findVisibleEndpoint(ctx.db, access, endpointId);
    query = query.where('endpoint_id', '=', endpointId);
  } else {
    let visible = ctx.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('tenant_id', '=', access.tenantId)
      .where('livemode', '=', access.livemode)
      .where('kind', '<>', 'subscription');
    if (access.customerAccountId)
      visible = visible.where('customer_account_id', '=', access.customerAccountId);
    if (access.installationId) visible = visible.where('installation_id', '=', access.installationId);
    query = query.where('endpoint_id', 'in', visible);
  }
  if (filters.status) query = query.where('status', '=', filters.status);
  return newestFirst(query, 'webhook_deliveries', filters, presentDelivery);
}

/** One delivery: the message as sent (or as it will be) and every attempt, oldest first. */
export async function getDelivery(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<DeliveryDetail> {
  requireScope(access, 'webhooks:read');
  const { delivery, endpoint } = await findVisibleDelivery(ctx, access, id);
  const attempts = await ctx.db
    .selectFrom('webhook_attempt_log')
    .selectAll()
    .where('delivery_id', '=', id)
    .orderBy('attempted_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
  const latest = attempts.at(-1);
  return {
    ...presentDelivery(delivery),
    message: {
      // Not sent yet: the headers it would carry if sent now (timestamp and signature are made per attempt).
      headers: latest
        ? headersOf(latest.request_headers)
        : buildMessage(ctx, delivery, endpoint, ctx.clock.now()).headers,
      body: delivery.payload,
    },
    attempts: attempts.map(presentAttempt),
  };
}

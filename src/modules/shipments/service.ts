import { sql } from 'kysely';
import type { Static } from 'typebox';
import type { AppContext, Trx } from '../../context.ts';
import { runAfterCommit } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { AppError } from '../../lib/errors.ts';
import { newId, randomBase62 } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { canSee, requireScope, type TenantAccess } from '../accounts/access.ts';
import { getCustomerAccountRow } from '../accounts/companies.ts';
import { issueToken } from '../recipients/tokens.ts';
import { etaChangedEvent } from '../tracking/events.ts';
import {
  type Carrier,
  checkProof,
  checkSubStatus,
  type EstimatedDelivery,
  normaliseDestination,
  normaliseEstimate,
  normaliseProof,
  toJson,
} from '../tracking/fields.ts';
import type { PatchShipmentBody } from '../tracking/schemas.ts';
import { isCurrency } from './currencies.ts';
import { recordEvents } from './events.ts';
import { canMove, type ExceptionReason, eventTypesForMove } from './lifecycle.ts';
import {
  type Parcel,
  presentShipment,
  presentTrackedShipment,
  type Shipment,
  type TrackedShipment,
} from './present.ts';

export {
  type Parcel,
  presentForVersion,
  presentShipment,
  presentTrackedShipment,
  type Shipment,
  type TrackedShipment,
} from './present.ts';

import type { ShipmentsTable } from './tables.ts';

export type ShipmentPatch = Static<typeof PatchShipmentBody>;

export interface CreateShipmentInput {
  recipient_name: string;
  recipient_email?: string | null;
  recipient_phone?: string | null;
  external_ref?: string | null;
  customer_account_id?: string | null;
  payment_mode?: 'prepaid' | 'cod';
  cod_amount_minor?: number | null;
  currency: string;
  parcels?: Parcel[];
  status?: 'draft' | 'confirmed';
  carrier?: Carrier | null;
  carrier_tracking_number?: string | null;
  destination?: ShipmentPatch['destination'];
  sub_status?: string | null;
  estimated_delivery?: EstimatedDelivery | null;
}

function newTrackingNumber(): string {
  return `WB${randomBase62(14).toUpperCase()}`;
}

export function shipmentEventData(status: string, previousStatus: string | null, shipment: Shipment) {
  return { status, previous_status: previousStatus, shipment };
}

export async function createShipment(
  ctx: AppContext,
  access: TenantAccess,
  input: CreateShipmentInput,
): Promise<TrackedShipment> {
  requireScope(access, 'shipments:write');
  const currency = input.currency.toUpperCase();
  if (!isCurrency(currency)) {
    throw new AppError('shipment.invalid_currency', `${input.currency} is not an ISO 4217 currency code`, {
      errors: [{ path: '/currency', message: 'must be an ISO 4217 code such as EUR' }],
    });
  }
  const paymentMode = input.payment_mode ?? 'prepaid';
  const cod = input.cod_amount_minor ?? null;
  if (paymentMode === 'cod' && (cod === null || cod <= 0)) {
    throw new AppError('shipment.invalid_cod', 'A cod shipment needs cod_amount_minor above 0', {
      errors: [{ path: '/cod_amount_minor', message: 'required and above 0 when payment_mode is cod' }],
    });
  }
  if (paymentMode === 'prepaid' && cod !== null && cod !== 0) {
    throw new AppError('shipment.invalid_cod', 'A prepaid shipment has no cod_amount_minor', {
      errors: [{ path: '/cod_amount_minor', message: 'only with payment_mode cod' }],
    });
  }
  const status = input.status ?? 'confirmed';
  const destination = normaliseDestination(input.destination ?? null);
  const subStatus = checkSubStatus(input.sub_status, status);
  const estimate = normaliseEstimate(input.estimated_delivery);
  // A merchant-bound caller always creates in its own account.
  let accountId = input.customer_account_id ?? null;
  if (access.customerAccountId) {
    if (accountId && accountId !== access.customerAccountId) throw new AppError('customer_account.not_found');
    accountId = access.customerAccountId;
  } else if (accountId) {
    await getCustomerAccountRow(ctx, access.tenantId, accountId);
  }
  const now = ctx.clock.now();
  const row: ShipmentsTable = {
    id: newId('shp'),
    tenant_id: access.tenantId,
    customer_account_id: accountId,
    livemode: access.livemode,
    tracking_number: newTrackingNumber(),
    status,
    external_ref: input.external_ref ?? null,
    recipient_name: input.recipient_name,
    recipient_email: input.recipient_email ?? null,
    recipient_phone: input.recipient_phone ?? null,
    payment_mode: paymentMode,
    cod_amount_minor: paymentMode === 'cod' ? cod : null,
    currency,
    parcels: JSON.stringify(input.parcels ?? []),
    exception_reason: null,
    carrier: toJson(input.carrier),
    carrier_tracking_number: input.carrier_tracking_number ?? null,
    destination: toJson(destination),
    sub_status: subStatus,
    estimated_delivery: toJson(estimate),
    proof_of_delivery: null,
    latest_checkpoint: null,
    latest_checkpoint_at: null,
    activity_at: now,
    stall_reported_at: null,
    created_at: now,
    updated_at: now,
  };
  const shipment = presentShipment(row);
  await ctx.db.transaction().execute(async (trx) => {
    await trx.insertInto('shipments').values(row).execute();
    await issueToken(trx, { tenantId: row.tenant_id, shipmentId: row.id }, now);
    await recordEvents(ctx, trx, [
      {
        type: 'shipment.created',
        tenantId: row.tenant_id,
        livemode: row.livemode,
        customerAccountId: accountId,
        shipmentId: row.id,
        createdAt: now,
        data: shipmentEventData(row.status, null, shipment),
        latest: { ...shipmentEventData(row.status, null, presentTrackedShipment(row)), checkpoint: null },
      },
    ]);
  });
  runAfterCommit(ctx);
  return presentTrackedShipment(row);
}

/** The shipment the caller may see, locked for the transaction: concurrent changes of one shipment queue on it. */
async function lockVisible(trx: Trx, access: TenantAccess, id: string): Promise<ShipmentsTable> {
  const current = await trx
    .selectFrom('shipments')
    .selectAll()
    .where('id', '=', id)
    .where('tenant_id', '=', access.tenantId)
    .forUpdate()
    .executeTakeFirst();
  if (!current || !canSee(access, current)) throw new AppError('shipment.not_found');
  return current;
}

async function findVisible(ctx: AppContext, access: TenantAccess, id: string): Promise<ShipmentsTable> {
  // The tenant too: one shard on Citus (decision 0071).
  const row = await ctx.db
    .selectFrom('shipments')
    .selectAll()
    .where('id', '=', id)
    .where('tenant_id', '=', access.tenantId)
    .executeTakeFirst();
  if (!row || !canSee(access, row)) throw new AppError('shipment.not_found');
  return row;
}

export async function getShipment(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<TrackedShipment> {
  requireScope(access, 'shipments:read');
  return presentTrackedShipment(await findVisible(ctx, access, id));
}

/**
 * PATCH /v1/shipments/{id}: the tracking fields given, and nothing else (never the status). A field
 * absent stays; null clears it. Every field is checked before anything is written.
 */
export async function updateShipment(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
  patch: ShipmentPatch,
): Promise<TrackedShipment> {
  requireScope(access, 'shipments:write');
  const destination = patch.destination === undefined ? undefined : normaliseDestination(patch.destination);
  const estimate =
    patch.estimated_delivery === undefined ? undefined : normaliseEstimate(patch.estimated_delivery);
  const proof = patch.proof_of_delivery === undefined ? undefined : normaliseProof(patch.proof_of_delivery);
  const updated = await ctx.db.transaction().execute(async (trx) => {
    const current = await lockVisible(trx, access, id);
    const subStatus =
      patch.sub_status === undefined ? undefined : checkSubStatus(patch.sub_status, current.status);
    if (proof !== undefined) checkProof(proof, current.status);
    const set: Partial<ShipmentsTable> = {};
    if (patch.carrier !== undefined) set.carrier = toJson(patch.carrier);
    if (patch.carrier_tracking_number !== undefined)
      set.carrier_tracking_number = patch.carrier_tracking_number;
    if (destination !== undefined) set.destination = toJson(destination);
    if (subStatus !== undefined) set.sub_status = subStatus;
    if (estimate !== undefined) set.estimated_delivery = toJson(estimate);
    if (proof !== undefined) set.proof_of_delivery = toJson(proof);
    if (Object.keys(set).length === 0) return current;
    set.updated_at = new Date(Math.max(ctx.clock.now().getTime(), current.updated_at.getTime() + 1));
    const row = await trx
      .updateTable('shipments')
      .set(set)
      .where('id', '=', id)
      .where('tenant_id', '=', access.tenantId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const etaChanged = etaChangedEvent(current, row, row.updated_at);
    if (etaChanged) await recordEvents(ctx, trx, [etaChanged]);
    return row;
  });
  runAfterCommit(ctx);
  return presentTrackedShipment(updated);
}

export async function listShipments(
  ctx: AppContext,
  access: TenantAccess,
  filters: PageRequest & {
    status?: string;
    customer_account_id?: string;
    /** The carrier's code (`carrier.code`), as the dashboard's filter names it. */
    carrier_code?: string;
    /** A tracking number, an external reference, or the start of a recipient's name (the MCP search). */
    query?: string;
    updated_after?: Date;
  },
): Promise<Page<TrackedShipment>> {
  requireScope(access, 'shipments:read');
  let query = ctx.db
    .selectFrom('shipments')
    .selectAll()
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode);
  if (access.customerAccountId) query = query.where('customer_account_id', '=', access.customerAccountId);
  if (filters.customer_account_id)
    query = query.where('customer_account_id', '=', filters.customer_account_id);
  if (filters.status) query = query.where('status', '=', filters.status);
  if (filters.carrier_code) query = query.where(sql`carrier->>'code'`, '=', filters.carrier_code);
  const text = filters.query?.trim();
  if (text) {
    // A tracking number or external reference exactly, or the start of the recipient's name.
    const prefix = `${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where((eb) =>
      eb.or([
        eb('tracking_number', '=', text),
        eb('carrier_tracking_number', '=', text),
        eb('external_ref', '=', text),
        eb('recipient_name', 'ilike', prefix),
      ]),
    );
  }
  if (filters.updated_after) query = query.where('updated_at', '>', filters.updated_after);
  return newestFirst(query, 'shipments', filters, presentTrackedShipment);
}

/**
 * The carriers the company's latest 1,000 shipments of this mode name, for the dashboard's filter
 * (at most 50): read along the list's index, so a page costs the same however many shipments there are.
 */
export async function shipmentCarriers(
  ctx: AppContext,
  access: TenantAccess,
): Promise<Array<{ code: string; name: string }>> {
  requireScope(access, 'shipments:read');
  let latest = ctx.db
    .selectFrom('shipments')
    .select('carrier')
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode);
  if (access.customerAccountId) latest = latest.where('customer_account_id', '=', access.customerAccountId);
  return ctx.db
    .selectFrom(latest.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1000).as('latest'))
    .select([sql<string>`carrier->>'code'`.as('code'), sql<string>`min(carrier->>'name')`.as('name')])
    .where('carrier', 'is not', null)
    .groupBy(sql`carrier->>'code'`)
    .orderBy('name')
    .limit(50)
    .execute();
}

export async function moveShipment(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
  input: { status: string; exception_reason?: ExceptionReason | null },
): Promise<TrackedShipment> {
  requireScope(access, 'shipments:write');
  const reason = input.exception_reason ?? null;
  if (reason && input.status !== 'exception') {
    throw new AppError('validation.failed', 'exception_reason goes with the status exception', {
      errors: [{ path: '/exception_reason', message: 'only with status exception' }],
    });
  }
  const shipment = await ctx.db.transaction().execute(async (trx) => {
    // The row lock orders concurrent moves of one shipment, so each sees the status the other left.
    const current = await lockVisible(trx, access, id);
    if (!canMove(current.status, input.status)) {
      throw new AppError(
        'shipment.invalid_transition',
        `A shipment cannot move from ${current.status} to ${input.status}`,
        {
          from: current.status,
          to: input.status,
        },
      );
    }
    const now = new Date(Math.max(ctx.clock.now().getTime(), current.updated_at.getTime() + 1));
    const updated = await trx
      .updateTable('shipments')
      .set({
        status: input.status,
        exception_reason: input.status === 'exception' ? (reason ?? 'held') : null,
        // A sub-status details one status: a move clears it.
        sub_status: null,
        activity_at: now,
        stall_reported_at: null,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('tenant_id', '=', access.tenantId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const presented = presentShipment(updated);
    await recordEvents(
      ctx,
      trx,
      eventTypesForMove(input.status).map((type) => ({
        type,
        tenantId: updated.tenant_id,
        livemode: updated.livemode,
        customerAccountId: updated.customer_account_id,
        shipmentId: updated.id,
        createdAt: now,
        data: shipmentEventData(updated.status, current.status, presented),
        latest: {
          ...shipmentEventData(updated.status, current.status, presentTrackedShipment(updated)),
          checkpoint: null,
        },
      })),
    );
    return presentTrackedShipment(updated);
  });
  runAfterCommit(ctx);
  return shipment;
}

export interface EventSummary {
  id: string;
  type: string;
  shipment_id: string | null;
  livemode: boolean;
  created_at: string;
  payload: string;
}

/** The events a caller can see, newest first (the dashboard's events list). */
export async function listEvents(
  ctx: AppContext,
  access: TenantAccess,
  filters: PageRequest & { shipment_id?: string },
): Promise<Page<EventSummary>> {
  requireScope(access, 'shipments:read');
  let query = ctx.db
    .selectFrom('events')
    .selectAll()
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode);
  if (access.customerAccountId) query = query.where('customer_account_id', '=', access.customerAccountId);
  if (filters.shipment_id) query = query.where('shipment_id', '=', filters.shipment_id);
  return newestFirst(query, 'events', filters, (row) => ({
    id: row.id,
    type: row.type,
    shipment_id: row.shipment_id,
    livemode: row.livemode,
    created_at: row.created_at.toISOString(),
    payload: row.payload,
  }));
}

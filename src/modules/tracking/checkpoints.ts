import { sql } from 'kysely';
import type { AppContext, Trx } from '../../context.ts';
import { runAfterCommit } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { decodeCursor, type Page, type PageRequest, pageLimit, toPage } from '../../lib/paging.ts';
import type { TenantAccess } from '../accounts/access.ts';
import { recordEvents } from '../shipments/events.ts';
import { eventTypesForMove, nextStatuses, type ShipmentStatus } from '../shipments/lifecycle.ts';
import {
  presentShipment,
  presentTrackedShipment,
  shipmentEventData,
  type TrackedShipment,
} from '../shipments/service.ts';
import type { ShipmentCheckpointsTable, ShipmentsTable } from '../shipments/tables.ts';
import { checkpointAddedEvent, etaChangedEvent } from './events.ts';
import {
  type Checkpoint,
  checkMessage,
  checkProof,
  checkSubStatus,
  type EstimatedDelivery,
  fromJson,
  type Location,
  type LocationInput,
  normaliseEstimate,
  normaliseLocation,
  normaliseProof,
  type ProofOfDeliveryInput,
  toJson,
  utc,
} from './fields.ts';
import type { CheckpointSource } from './schemas.ts';

export type { CheckpointSource } from './schemas.ts';

/** A checkpoint as a sender gives it (POST /v1/shipments/{id}/checkpoints, an inbound batch's entry). */
export interface CheckpointInput {
  /** ISO 8601 with an offset or Z. */
  occurred_at: string;
  location?: LocationInput | null;
  /** 1 to 500 characters. */
  message: string;
  status?: ShipmentStatus | null;
  /** A catalogue code of `status` (or, without one, of the shipment's status). */
  sub_status?: string | null;
  estimated_delivery?: EstimatedDelivery | null;
  /** Only with (or after) the move to delivered. */
  proof_of_delivery?: ProofOfDeliveryInput | null;
  /** The sender's id: the same one again on the shipment changes nothing. */
  external_id?: string | null;
}

/** Which shipment, seen by whom: the company, the mode, and a merchant account when the caller is bound to one. */
export interface CheckpointTarget {
  tenantId: string;
  mode: 'live' | 'test';
  /** A merchant-bound caller (or inbound source) sees only its account's shipments; null sees all. */
  customerAccountId?: string | null;
  shipmentId: string;
}

/** The shipment an API caller (REST, MCP) names, seen as its token sees shipments. */
export function targetOf(access: TenantAccess, shipmentId: string): CheckpointTarget {
  return {
    tenantId: access.tenantId,
    mode: access.livemode ? 'live' : 'test',
    customerAccountId: access.customerAccountId,
    shipmentId,
  };
}

export interface ApplyCheckpointRequest extends CheckpointTarget {
  input: CheckpointInput;
  source: CheckpointSource;
}

export interface ApplyCheckpointResult {
  checkpoint: Checkpoint;
  /** The shipment after it, in the latest shape. */
  shipment: TrackedShipment;
  /** false: kept in the timeline, moved nothing (older than the newest checkpoint, or backward). */
  applied: boolean;
  /** false when a checkpoint of the same external_id was there already (it is the one answered). */
  created: boolean;
}

export function presentCheckpoint(row: ShipmentCheckpointsTable): Checkpoint {
  return {
    id: row.id,
    shipment_id: row.shipment_id,
    occurred_at: row.occurred_at.toISOString(),
    location: fromJson<Location>(row.location),
    message: row.message,
    status: row.status as ShipmentStatus | null,
    sub_status: row.sub_status,
    estimated_delivery: fromJson<EstimatedDelivery>(row.estimated_delivery),
    source: row.source as CheckpointSource,
    external_id: row.external_id,
    applied: row.applied,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * The statuses a shipment passes through from `from` to reach `to` going forward (`to` last), or
 * null when `to` is not ahead of it. The shortest way along the allowed moves, never through
 * `exception` on the way (a carrier that skipped scans did not report a problem): `confirmed` to
 * `in_transit` is `[picked_up, in_transit]`; `in_transit` to `picked_up` is null (backward), and so
 * is `out_for_delivery` to `in_transit` (only an exception leads back).
 */
export function forwardPath(from: ShipmentStatus, to: ShipmentStatus): ShipmentStatus[] | null {
  if (from === to) return [];
  const previous = new Map<ShipmentStatus, ShipmentStatus>();
  const queue: ShipmentStatus[] = [from];
  while (queue.length > 0) {
    const at = queue.shift() as ShipmentStatus;
    for (const next of nextStatuses(at)) {
      if (next === from || previous.has(next)) continue;
      previous.set(next, at);
      if (next === to) {
        const path: ShipmentStatus[] = [to];
        for (let step = at; step !== from; step = previous.get(step) as ShipmentStatus) path.unshift(step);
        return path;
      }
      if (next !== 'exception') queue.push(next);
    }
  }
  return null;
}

/** The checks that need no shipment: before any transaction, so bad input writes nothing. */
function normaliseInput(input: CheckpointInput) {
  return {
    occurredAt: new Date(utc(input.occurred_at)),
    location: normaliseLocation(input.location),
    message: checkMessage(input.message),
    status: input.status ?? null,
    estimate: normaliseEstimate(input.estimated_delivery),
    proof: normaliseProof(input.proof_of_delivery),
    externalId: input.external_id ?? null,
  };
}

/** The shipment a target names, locked for this transaction; shipment.not_found when the caller cannot see it. */
async function lockShipment(trx: Trx, target: CheckpointTarget): Promise<ShipmentsTable> {
  const row = await trx
    .selectFrom('shipments')
    .selectAll()
    .where('id', '=', target.shipmentId)
    .where('tenant_id', '=', target.tenantId)
    .forUpdate()
    .executeTakeFirst();
  const visible =
    row &&
    row.livemode === (target.mode === 'live') &&
    (!target.customerAccountId || row.customer_account_id === target.customerAccountId);
  if (!row || !visible) throw new AppError('shipment.not_found');
  return row;
}

/**
 * Adds one checkpoint to a shipment's timeline in the caller's transaction, and applies it
 * (CONTRACT.md, Tracking): a checkpoint not older than the newest one moves the shipment forward
 * to its status along the allowed moves, through the statuses between (each move with its events,
 * in order), and sets its sub-status, estimate and proof of delivery; an older one, or one whose
 * status lies behind, is kept with `applied: false` and changes nothing else. A checkpoint whose
 * `external_id` the shipment has already answers that first one (`created: false`).
 *
 * Throws AppError: `shipment.not_found`, or a 422 `tracking.*` naming the field, before anything is
 * written. The caller commits, then calls runAfterCommit(ctx) (applyCheckpoint does both).
 */
export async function applyCheckpointIn(
  ctx: AppContext,
  trx: Trx,
  request: ApplyCheckpointRequest,
): Promise<ApplyCheckpointResult> {
  const input = normaliseInput(request.input);
  const current = await lockShipment(trx, request);
  if (input.externalId !== null) {
    const first = await trx
      .selectFrom('shipment_checkpoints')
      .selectAll()
      .where('tenant_id', '=', current.tenant_id)
      .where('shipment_id', '=', current.id)
      .where('external_id', '=', input.externalId)
      .executeTakeFirst();
    if (first) {
      return {
        checkpoint: presentCheckpoint(first),
        shipment: presentTrackedShipment(current),
        applied: first.applied,
        created: false,
      };
    }
  }
  const currentStatus = current.status as ShipmentStatus;
  const older = current.latest_checkpoint_at !== null && input.occurredAt < current.latest_checkpoint_at;
  const path = input.status === null ? [] : forwardPath(currentStatus, input.status);
  const applied = !older && path !== null;
  // The status the checkpoint speaks of: its own, or the shipment's.
  const status = input.status ?? currentStatus;
  const subStatus = checkSubStatus(request.input.sub_status, status);
  if (applied) checkProof(input.proof, status);

  const now = ctx.clock.now();
  const row: ShipmentCheckpointsTable = {
    id: newId('chk'),
    tenant_id: current.tenant_id,
    shipment_id: current.id,
    occurred_at: input.occurredAt,
    location: toJson(input.location),
    message: input.message,
    status: input.status,
    sub_status: subStatus,
    estimated_delivery: toJson(input.estimate),
    source: request.source,
    external_id: input.externalId,
    applied,
    created_at: now,
  };
  await trx.insertInto('shipment_checkpoints').values(row).execute();
  const checkpoint = presentCheckpoint(row);
  if (!applied) {
    // Kept in the timeline: told as added (applied false), nothing else.
    await recordEvents(ctx, trx, [checkpointAddedEvent(current, checkpoint, now)]);
    return { checkpoint, shipment: presentTrackedShipment(current), applied, created: true };
  }

  // Each move one millisecond after the one before, so updated_at orders the messages.
  let at = Math.max(now.getTime(), current.updated_at.getTime() + 1);
  // The moves' messages show the checkpoint behind them as the shipment's latest already.
  let state: ShipmentsTable = {
    ...current,
    latest_checkpoint: toJson(checkpoint),
    latest_checkpoint_at: input.occurredAt,
  };
  const events: Parameters<typeof recordEvents>[2][number][] = [];
  for (const next of path ?? []) {
    const previous = state.status;
    state = {
      ...state,
      status: next,
      exception_reason: next === 'exception' ? 'held' : null,
      sub_status: null,
      updated_at: new Date(at),
    };
    const shown = presentShipment(state);
    const tracked = presentTrackedShipment(state);
    for (const type of eventTypesForMove(next)) {
      events.push({
        type,
        tenantId: state.tenant_id,
        livemode: state.livemode,
        customerAccountId: state.customer_account_id,
        shipmentId: state.id,
        createdAt: state.updated_at,
        data: shipmentEventData(next, previous, shown),
        latest: { ...shipmentEventData(next, previous, tracked), checkpoint },
      });
    }
    at += 1;
  }
  const moved = (path ?? []).length > 0;
  const set: Partial<ShipmentsTable> = {
    latest_checkpoint: toJson(checkpoint),
    latest_checkpoint_at: input.occurredAt,
    activity_at: now,
    stall_reported_at: null,
    updated_at: moved ? state.updated_at : new Date(at),
  };
  if (moved) {
    set.status = state.status;
    set.exception_reason = state.exception_reason;
  }
  if (moved || subStatus !== null) set.sub_status = subStatus;
  if (input.estimate) set.estimated_delivery = toJson(input.estimate);
  if (input.proof) set.proof_of_delivery = toJson(input.proof);
  const updated = await trx
    .updateTable('shipments')
    .set(set)
    .where('id', '=', current.id)
    .where('tenant_id', '=', current.tenant_id)
    .returningAll()
    .executeTakeFirstOrThrow();
  events.push(checkpointAddedEvent(updated, checkpoint, updated.updated_at));
  const etaChanged = etaChangedEvent(current, updated, updated.updated_at);
  if (etaChanged) events.push(etaChanged);
  await recordEvents(ctx, trx, events);
  return { checkpoint, shipment: presentTrackedShipment(updated), applied, created: true };
}

/**
 * applyCheckpointIn in a transaction of its own, then the work that waits for the commit (the
 * webhooks' fan-out). The one entry point for every source: the REST API (`api`), an inbound
 * carrier message (`inbound`), the dashboard (`dashboard`), the test-mode walk (`simulation`).
 *
 *   const { checkpoint, shipment, applied, created } = await applyCheckpoint(ctx, {
 *     tenantId, mode: 'live', customerAccountId: null, shipmentId, input, source: 'inbound',
 *   });
 */
export async function applyCheckpoint(
  ctx: AppContext,
  request: ApplyCheckpointRequest,
): Promise<ApplyCheckpointResult> {
  const result = await ctx.db.transaction().execute((trx) => applyCheckpointIn(ctx, trx, request));
  runAfterCommit(ctx);
  return result;
}

/**
 * The shipment a carrier's number names within a company, mode and (when given) merchant account:
 * Waybill's tracking number, or the carrier's own (`carrier_tracking_number`). Never another
 * company's, mode's or account's. Null when none matches; the oldest when a carrier number is on
 * several shipments.
 */
export async function findShipmentByNumber(
  ctx: AppContext,
  scope: { tenantId: string; mode: 'live' | 'test'; customerAccountId?: string | null; number: string },
): Promise<{ id: string; customerAccountId: string | null } | null> {
  let query = ctx.db
    .selectFrom('shipments')
    .select(['id', 'customer_account_id'])
    .where('tenant_id', '=', scope.tenantId)
    .where('livemode', '=', scope.mode === 'live')
    .where((eb) =>
      eb.or([eb('tracking_number', '=', scope.number), eb('carrier_tracking_number', '=', scope.number)]),
    );
  if (scope.customerAccountId) query = query.where('customer_account_id', '=', scope.customerAccountId);
  const row = await query.orderBy('created_at', 'asc').orderBy('id', 'asc').limit(1).executeTakeFirst();
  return row ? { id: row.id, customerAccountId: row.customer_account_id } : null;
}

/** A shipment's timeline, newest `occurred_at` first (GET /v1/shipments/{id}/checkpoints). */
export async function listCheckpoints(
  ctx: AppContext,
  target: CheckpointTarget,
  request: PageRequest,
): Promise<Page<Checkpoint>> {
  const shipment = await ctx.db
    .selectFrom('shipments')
    .select(['id', 'livemode', 'customer_account_id'])
    .where('id', '=', target.shipmentId)
    .where('tenant_id', '=', target.tenantId)
    .executeTakeFirst();
  if (
    !shipment ||
    shipment.livemode !== (target.mode === 'live') ||
    (target.customerAccountId && shipment.customer_account_id !== target.customerAccountId)
  )
    throw new AppError('shipment.not_found');
  const limit = pageLimit(request.limit);
  const position = decodeCursor(request.cursor);
  let query = ctx.db
    .selectFrom('shipment_checkpoints')
    .selectAll()
    .where('tenant_id', '=', target.tenantId)
    .where('shipment_id', '=', target.shipmentId);
  if (position)
    query = query.where(
      sql<boolean>`(occurred_at, id) < (${position.createdAt}::timestamptz, ${position.id}::text)`,
    );
  const rows = await query
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  // The cursor holds the position in this list's order: occurred_at, then id.
  return toPage(
    rows.map((row) => ({ id: row.id, created_at: row.occurred_at, row })),
    limit,
    (entry) => presentCheckpoint(entry.row),
  );
}

/**
 * The newest `perShipment` checkpoints of each of a company's shipments, newest `occurred_at`
 * first (the MCP tools' timelines), in one query. Shipments the caller may see only: the ids come
 * from a query that checked it.
 */
export async function recentCheckpoints(
  ctx: AppContext,
  tenantId: string,
  shipmentIds: readonly string[],
  perShipment = 20,
): Promise<Map<string, Checkpoint[]>> {
  const timelines = new Map<string, Checkpoint[]>(shipmentIds.map((id) => [id, []]));
  if (shipmentIds.length === 0) return timelines;
  const { rows } = await sql<ShipmentCheckpointsTable>`
    SELECT * FROM (
      SELECT c.*, row_number() OVER (PARTITION BY c.shipment_id ORDER BY c.occurred_at DESC, c.id DESC) AS n
      FROM shipment_checkpoints c
      WHERE c.tenant_id = ${tenantId} AND c.shipment_id IN (${sql.join([...shipmentIds])})
    ) t WHERE t.n <= ${perShipment} ORDER BY t.occurred_at DESC, t.id DESC`.execute(ctx.db);
  for (const row of rows) timelines.get(row.shipment_id)?.push(presentCheckpoint(row));
  return timelines;
}

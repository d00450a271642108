import { sql } from 'kysely';
import type { AppContext, Trx } from '../../context.ts';
import { runAfterCommit } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { decodeCursor, type Page, type PageRequest, pageLimit, toPage } from '../../lib/paging.ts';
import type { TenantAccess } from '../accounts/access.ts';
import { type RecordedEvent, recordEvents } from '../shipments/events.ts';
import { eventTypesForMove, nextStatuses, type ShipmentStatus } from '../shipments/lifecycle.ts';
import { presentForVersion } from '../shipments/present.ts';
import { presentTrackedShipment, shipmentEventData, type TrackedShipment } from '../shipments/service.ts';
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
  type ProofOfDelivery,
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

/** The checks that need no shipment: before any write, so bad input writes nothing. */
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

type NormalisedInput = ReturnType<typeof normaliseInput>;

/**
 * A checkpoint of a batch that was refused (a 422 naming its field, or `shipment.not_found`), with
 * its place in the batch. Thrown before anything of the batch is written.
 */
export class CheckpointRefused extends Error {
  readonly index: number;
  readonly error: AppError;
  constructor(index: number, error: AppError) {
    super(error.message);
    this.index = index;
    this.error = error;
  }
}

const visibleTo = (row: ShipmentsTable, target: CheckpointTarget): boolean =>
  row.livemode === (target.mode === 'live') &&
  (!target.customerAccountId || row.customer_account_id === target.customerAccountId);

/** The shipments the batch names, locked for this transaction, in one query (in id order, so two batches lock alike). */
async function lockShipments(
  trx: Trx,
  tenantId: string,
  shipmentIds: readonly string[],
): Promise<Map<string, ShipmentsTable>> {
  const rows = await trx
    .selectFrom('shipments')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', [...new Set(shipmentIds)].sort())
    .orderBy('id')
    .forUpdate()
    .execute();
  return new Map(rows.map((row) => [row.id, row]));
}

const externalKey = (shipmentId: string, externalId: string) => `${shipmentId}\u0000${externalId}`;

/** The checkpoints already on these shipments with these external_ids, in one query, by shipment and external_id. */
async function knownExternalIds(
  trx: Trx,
  tenantId: string,
  pairs: ReadonlyArray<{ shipmentId: string; externalId: string }>,
): Promise<Map<string, ShipmentCheckpointsTable>> {
  const known = new Map<string, ShipmentCheckpointsTable>();
  if (pairs.length === 0) return known;
  const wanted = new Set(pairs.map((p) => externalKey(p.shipmentId, p.externalId)));
  const rows = await trx
    .selectFrom('shipment_checkpoints')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('shipment_id', 'in', [...new Set(pairs.map((p) => p.shipmentId))])
    .where('external_id', 'in', [...new Set(pairs.map((p) => p.externalId))])
    .execute();
  for (const row of rows) {
    const key = externalKey(row.shipment_id, row.external_id as string);
    if (wanted.has(key)) known.set(key, row);
  }
  return known;
}

/** What one checkpoint does to a shipment's state, worked out in memory (nothing written). */
interface Step {
  row: ShipmentCheckpointsTable;
  checkpoint: Checkpoint;
  applied: boolean;
  /** The shipment after it (its jsonb fields as values, not JSON text), and presented. */
  after: ShipmentsTable;
  shown: TrackedShipment;
  events: RecordedEvent[];
}

/**
 * One checkpoint against the shipment's state before it (CONTRACT.md, Tracking): a checkpoint not
 * older than the newest one moves the shipment forward to its status along the allowed moves,
 * through the statuses between (each move with its events, in order), and sets its sub-status,
 * estimate and proof of delivery; an older one, or one whose status lies behind, is kept with
 * `applied: false` and changes nothing else. Throws the 422 `tracking.*` naming the field.
 */
function stepCheckpoint(
  current: ShipmentsTable,
  currentShown: () => TrackedShipment,
  input: NormalisedInput,
  request: ApplyCheckpointRequest,
  now: Date,
): Step {
  const currentStatus = current.status as ShipmentStatus;
  const older = current.latest_checkpoint_at !== null && input.occurredAt < current.latest_checkpoint_at;
  const path = input.status === null ? [] : forwardPath(currentStatus, input.status);
  const applied = !older && path !== null;
  // The status the checkpoint speaks of: its own, or the shipment's.
  const status = input.status ?? currentStatus;
  const subStatus = checkSubStatus(request.input.sub_status, status);
  if (applied) checkProof(input.proof, status);

  const row: ShipmentCheckpointsTable = {
    id: newId('chk'),
    tenant_id: current.tenant_id,
    shipment_id: current.id,
    occurred_at: input.occurredAt,
    location: input.location,
    message: input.message,
    status: input.status,
    sub_status: subStatus,
    estimated_delivery: input.estimate,
    source: request.source,
    external_id: input.externalId,
    applied,
    created_at: now,
  };
  const checkpoint = presentCheckpoint(row);
  if (!applied) {
    // Kept in the timeline: told as added (applied false), nothing else.
    const shown = currentShown();
    return {
      row,
      checkpoint,
      applied,
      after: current,
      shown,
      events: [checkpointAddedEvent(current, checkpoint, now, shown)],
    };
  }

  // Each move one millisecond after the one before, so updated_at orders the messages.
  let at = Math.max(now.getTime(), current.updated_at.getTime() + 1);
  // The moves' messages show the checkpoint behind them as the shipment's latest already.
  let state: ShipmentsTable = {
    ...current,
    latest_checkpoint: checkpoint,
    latest_checkpoint_at: input.occurredAt,
  };
  const events: RecordedEvent[] = [];
  for (const next of path ?? []) {
    const previous = state.status;
    state = {
      ...state,
      status: next,
      exception_reason: next === 'exception' ? 'held' : null,
      sub_status: null,
      updated_at: new Date(at),
    };
    const tracked = presentTrackedShipment(state);
    // 2026-11-01's shipment is the tracked one without the tracking fields (presentForVersion).
    const shown = presentForVersion(tracked, '2026-11-01');
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
  const after: ShipmentsTable = {
    ...state,
    activity_at: now,
    stall_reported_at: null,
    updated_at: moved ? state.updated_at : new Date(at),
  };
  if (moved || subStatus !== null) after.sub_status = subStatus;
  if (input.estimate) after.estimated_delivery = input.estimate;
  if (input.proof) after.proof_of_delivery = input.proof;
  const shown = presentTrackedShipment(after);
  events.push(checkpointAddedEvent(after, checkpoint, after.updated_at, shown));
  const etaChanged = etaChangedEvent(current, after, after.updated_at, shown);
  if (etaChanged) events.push(etaChanged);
  return { row, checkpoint, applied, after, shown, events };
}

/** What a batch writes to one shipment: its state after its last checkpoint, and the estimate and proof it set. */
interface ShipmentWrite {
  row: ShipmentsTable;
  estimate: EstimatedDelivery | null;
  proof: ProofOfDelivery | null;
}

const iso = (value: Date | null) => (value === null ? null : value.toISOString());

/**
 * The shipments a batch changed, in one UPDATE: each to its state after its last checkpoint of the
 * batch. An estimate or proof the batch did not give keeps the stored value (COALESCE: a
 * checkpoint never clears them), so what was read is never written back.
 */
async function writeShipments(trx: Trx, tenantId: string, writes: readonly ShipmentWrite[]): Promise<void> {
  if (writes.length === 0) return;
  const column = <T>(pick: (write: ShipmentWrite) => T) => writes.map(pick);
  await sql`UPDATE shipments AS s SET
      status = v.status,
      exception_reason = v.exception_reason,
      sub_status = v.sub_status,
      estimated_delivery = COALESCE(v.estimated_delivery::jsonb, s.estimated_delivery),
      proof_of_delivery = COALESCE(v.proof_of_delivery::jsonb, s.proof_of_delivery),
      latest_checkpoint = v.latest_checkpoint::jsonb,
      latest_checkpoint_at = v.latest_checkpoint_at,
      activity_at = v.activity_at,
      stall_reported_at = NULL,
      updated_at = v.updated_at
    FROM unnest(
      ${column((w) => w.row.id)}::text[],
      ${column((w) => w.row.status)}::text[],
      ${column((w) => w.row.exception_reason)}::text[],
      ${column((w) => w.row.sub_status)}::text[],
      ${column((w) => toJson(w.estimate))}::text[],
      ${column((w) => toJson(w.proof))}::text[],
      ${column((w) => toJson(w.row.latest_checkpoint))}::text[],
      ${column((w) => iso(w.row.latest_checkpoint_at))}::timestamptz[],
      ${column((w) => iso(w.row.activity_at))}::timestamptz[],
      ${column((w) => iso(w.row.updated_at))}::timestamptz[]
    ) AS v(id, status, exception_reason, sub_status, estimated_delivery, proof_of_delivery,
      latest_checkpoint, latest_checkpoint_at, activity_at, updated_at)
    WHERE s.tenant_id = ${tenantId} AND s.id = v.id`.execute(trx);
}

/** The batch's new checkpoints in one INSERT: a column an array (13 parameters, whatever the count). */
async function insertCheckpoints(trx: Trx, rows: readonly ShipmentCheckpointsTable[]): Promise<void> {
  if (rows.length === 0) return;
  const column = <T>(pick: (row: ShipmentCheckpointsTable) => T) => rows.map(pick);
  await sql`INSERT INTO shipment_checkpoints (id, tenant_id, shipment_id, occurred_at, location, message,
      status, sub_status, estimated_delivery, source, external_id, applied, created_at)
    SELECT id, tenant_id, shipment_id, occurred_at, location::jsonb, message, status, sub_status,
      estimated_delivery::jsonb, source, external_id, applied, created_at
    FROM unnest(
      ${column((r) => r.id)}::text[],
      ${column((r) => r.tenant_id)}::text[],
      ${column((r) => r.shipment_id)}::text[],
      ${column((r) => r.occurred_at.toISOString())}::timestamptz[],
      ${column((r) => toJson(r.location))}::text[],
      ${column((r) => r.message)}::text[],
      ${column((r) => r.status)}::text[],
      ${column((r) => r.sub_status)}::text[],
      ${column((r) => toJson(r.estimated_delivery))}::text[],
      ${column((r) => r.source)}::text[],
      ${column((r) => r.external_id)}::text[],
      ${column((r) => r.applied)}::boolean[],
      ${column((r) => r.created_at.toISOString())}::timestamptz[]
    ) AS v(id, tenant_id, shipment_id, occurred_at, location, message, status, sub_status,
      estimated_delivery, source, external_id, applied, created_at)`.execute(trx);
}

/** One checkpoint of a batch as applyCheckpointsIn answers it (the shipment as a row: present it if needed). */
export interface BatchCheckpointResult {
  checkpoint: Checkpoint;
  /** The shipment after it (or, for a duplicate, as it was). */
  after: ShipmentsTable;
  /** false: kept in the timeline, moved nothing (older than the newest checkpoint, or backward). */
  applied: boolean;
  /** false when a checkpoint of the same external_id was there already (it is the one answered). */
  created: boolean;
}

export interface ApplyCheckpointsOptions {
  /**
   * The batch's shipments, locked by the caller in this transaction (SELECT * ... FOR UPDATE): no
   * query of their own then (inbound locks them as it finds them by number).
   */
  locked?: ReadonlyMap<string, ShipmentsTable>;
}

/**
 * Adds many checkpoints of one company to their shipments' timelines in the caller's transaction,
 * and applies them, set-wise (issue 51 item 7, decision 0087): the shipments locked in one query,
 * the external_ids looked up in one, the checkpoints inserted in one INSERT, the shipments moved
 * in one UPDATE, and every event (the moves', in order, then checkpoint_added and eta_changed)
 * recorded in one recordEvents, hence one fan-out. The rules are applied checkpoint by checkpoint
 * in the batch's order, in memory: several checkpoints of one shipment each see the shipment as
 * the ones before them left it (the same external_id twice: the second answers the first,
 * `created: false`), so the outcomes, rows and events are those of applying them one at a time.
 *
 * Throws CheckpointRefused (the first refused checkpoint's index and its AppError:
 * `shipment.not_found`, a 422 `tracking.*` naming the field) before anything is written. The
 * caller commits, then calls runAfterCommit(ctx).
 */
export async function applyCheckpointsIn(
  ctx: AppContext,
  trx: Trx,
  requests: readonly ApplyCheckpointRequest[],
  options: ApplyCheckpointsOptions = {},
): Promise<BatchCheckpointResult[]> {
  const first = requests[0];
  if (!first) return [];
  const tenantId = first.tenantId;
  if (requests.some((r) => r.tenantId !== tenantId))
    throw new Error('applyCheckpointsIn: one company a batch');
  // Bad input is found before any query; the first refusal in the batch's order is the one told.
  const inputs = requests.map((request) => {
    try {
      return { input: normaliseInput(request.input) };
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return { error };
    }
  });
  const states = new Map(
    options.locked ??
      (await lockShipments(
        trx,
        tenantId,
        requests.map((r) => r.shipmentId),
      )),
  );
  const known = await knownExternalIds(
    trx,
    tenantId,
    requests.flatMap((request, i) => {
      const externalId = inputs[i]?.input?.externalId;
      return externalId ? [{ shipmentId: request.shipmentId, externalId }] : [];
    }),
  );

  const results: BatchCheckpointResult[] = [];
  const rows: ShipmentCheckpointsTable[] = [];
  const events: RecordedEvent[] = [];
  const writes = new Map<string, ShipmentWrite>();
  // A shipment's presentation, made once per state (a state is replaced, never changed).
  const presented = new WeakMap<ShipmentsTable, TrackedShipment>();
  const present = (row: ShipmentsTable): TrackedShipment => {
    let shown = presented.get(row);
    if (!shown) {
      shown = presentTrackedShipment(row);
      presented.set(row, shown);
    }
    return shown;
  };
  for (const [index, request] of requests.entries()) {
    try {
      const prepared = inputs[index] as { input?: NormalisedInput; error?: AppError };
      if (prepared.error) throw prepared.error;
      const input = prepared.input as NormalisedInput;
      const current = states.get(request.shipmentId);
      if (!current || !visibleTo(current, request)) throw new AppError('shipment.not_found');
      const key = input.externalId === null ? null : externalKey(current.id, input.externalId);
      const already = key === null ? undefined : known.get(key);
      if (already) {
        const checkpoint = presentCheckpoint(already);
        results.push({ checkpoint, after: current, applied: already.applied, created: false });
        continue;
      }
      const step = stepCheckpoint(current, () => present(current), input, request, ctx.clock.now());
      presented.set(step.after, step.shown);
      rows.push(step.row);
      events.push(...step.events);
      if (key !== null) known.set(key, step.row);
      if (step.applied) {
        states.set(current.id, step.after);
        const write = writes.get(current.id) ?? { row: step.after, estimate: null, proof: null };
        write.row = step.after;
        write.estimate = input.estimate ?? write.estimate;
        write.proof = input.proof ?? write.proof;
        writes.set(current.id, write);
      }
      results.push({ checkpoint: step.checkpoint, after: step.after, applied: step.applied, created: true });
    } catch (error) {
      throw error instanceof AppError ? new CheckpointRefused(index, error) : error;
    }
  }

  await insertCheckpoints(trx, rows);
  await writeShipments(trx, tenantId, [...writes.values()]);
  await recordEvents(ctx, trx, events);
  return results;
}

/**
 * Adds one checkpoint to a shipment's timeline in the caller's transaction, and applies it: a
 * batch of one of applyCheckpointsIn (the rules are there). A checkpoint whose `external_id` the
 * shipment has already answers that first one (`created: false`).
 *
 * Throws AppError: `shipment.not_found`, or a 422 `tracking.*` naming the field, before anything is
 * written. The caller commits, then calls runAfterCommit(ctx) (applyCheckpoint does both).
 */
export async function applyCheckpointIn(
  ctx: AppContext,
  trx: Trx,
  request: ApplyCheckpointRequest,
): Promise<ApplyCheckpointResult> {
  try {
    const [result] = await applyCheckpointsIn(ctx, trx, [request]);
    const { after, ...rest } = result as BatchCheckpointResult;
    return { ...rest, shipment: presentTrackedShipment(after) };
  } catch (error) {
    throw error instanceof CheckpointRefused ? error.error : error;
  }
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

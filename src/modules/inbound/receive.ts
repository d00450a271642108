import { type AppContext, runAfterCommit, type Trx } from '../../context.ts';
import {
  type SignedHeaders,
  secretsForSigning,
  type VerifyFailure,
  verifySignature,
} from '../../delivery/signing.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, type FieldError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { ShipmentsTable } from '../shipments/tables.ts';
import {
  type ApplyCheckpointRequest,
  applyCheckpointsIn,
  type BatchCheckpointResult,
  type CheckpointInput,
  CheckpointRefused,
} from '../tracking/checkpoints.ts';
import type { InboundMessageStatus, InboundSourcesTable } from './tables.ts';

/** CONTRACT.md "Inbound": at most 100 messages a second per source. */
export const MESSAGES_PER_SECOND = 100;
/** At most 500 checkpoints a message, 1 MB a body. */
export const MAX_CHECKPOINTS = 500;
export const MAX_BODY_BYTES = 1024 * 1024;

/** One checkpoint as a carrier sends it: the shipment's number, then what POST .../checkpoints takes. */
export interface InboundCheckpoint extends CheckpointInput {
  tracking_number?: string;
  carrier_tracking_number?: string;
}

/**
 * What became of one checkpoint: `applied` (it moved or joined the timeline), `not_applied` (kept
 * in the timeline, older or backward: it moved nothing), `duplicate` (its external_id was there
 * already), `unmatched` (no shipment of the source's company, mode and merchant has its number).
 */
export type CheckpointOutcome = 'applied' | 'not_applied' | 'duplicate' | 'unmatched';

export interface CheckpointResult {
  index: number;
  shipment_id: string | null;
  checkpoint_id: string | null;
  outcome: CheckpointOutcome;
}

export interface ReceiveAnswer {
  accepted: number;
  duplicates: number;
  unmatched: number;
}

/** Why a message was refused, as the log records it. */
const REJECTIONS: Record<VerifyFailure, string> = {
  missing_headers: 'missing_headers: webhook-id, webhook-timestamp and webhook-signature are required',
  timestamp_out_of_range: 'timestamp_out_of_range: webhook-timestamp is more than 5 minutes away',
  bad_signature: "bad_signature: no signature verifies with the source's secret",
};

/**
 * 100 messages a second per source, counted in whole seconds of the service's clock, in this
 * process (each process of a deployment counts its own).
 */
export class SourceRateLimiter {
  readonly #clock: Clock;
  readonly #limit: number;
  readonly #windows = new Map<string, { second: number; count: number }>();

  constructor(clock: Clock, limit = MESSAGES_PER_SECOND) {
    this.#clock = clock;
    this.#limit = limit;
  }

  /** Counts one message; throws 429 with Retry-After past the limit. */
  take(sourceId: string): void {
    const ms = this.#clock.now().getTime();
    const second = Math.floor(ms / 1000);
    let window = this.#windows.get(sourceId);
    if (!window || window.second !== second) {
      if (this.#windows.size >= 10_000) this.#windows.clear();
      window = { second, count: 0 };
      this.#windows.set(sourceId, window);
    }
    window.count += 1;
    if (window.count > this.#limit) {
      const error = new AppError(
        'rate_limited',
        `At most ${this.#limit} messages a second per inbound source`,
      );
      error.retryAfter = Math.max(1, Math.ceil(((second + 1) * 1000 - ms) / 1000));
      throw error;
    }
  }
}

/** The source a message is addressed to, by the id in its URL alone (the URL names no company). */
export async function sourceForMessage(ctx: AppContext, id: string): Promise<InboundSourcesTable> {
  // Read from the path before any schema runs: only an id's shape reaches the database.
  if (!/^ins_[0-9A-Za-z]{1,60}$/.test(id)) throw new AppError('inbound_source.not_found');
  const row = await ctx.db.selectFrom('inbound_sources').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new AppError('inbound_source.not_found');
  return row;
}

const webhookIdOf = (headers: SignedHeaders): string | null => {
  const value = headers['webhook-id'];
  return typeof value === 'string' && value.length > 0 ? value.slice(0, 256) : null;
};

async function logMessage(
  db: AppContext['db'] | Trx,
  source: InboundSourcesTable,
  fields: { webhookId: string | null; status: InboundMessageStatus; reason: string | null; at: Date },
  results: CheckpointResult[] = [],
): Promise<string> {
  const id = newId('inm');
  await db
    .insertInto('inbound_messages')
    .values({
      id,
      tenant_id: source.tenant_id,
      source_id: source.id,
      webhook_id: fields.webhookId,
      status: fields.status,
      reason: fields.reason,
      results: JSON.stringify(results),
      created_at: fields.at,
    })
    .execute();
  return id;
}

/**
 * Verifies a message's Standard Webhooks signature over its raw bytes, before anything reads them:
 * with the source's secret, or its previous one during the 24 h after a rotation. A message that
 * does not verify is logged `rejected` with the reason, without its body, and answers 401.
 */
export async function verifyMessage(
  ctx: AppContext,
  source: InboundSourcesTable,
  headers: SignedHeaders,
  body: Buffer,
): Promise<void> {
  const now = ctx.clock.now();
  const failure = verifySignature(secretsForSigning(ctx, source, now), headers, body, now);
  if (failure === null) return;
  await logMessage(ctx.db, source, {
    webhookId: webhookIdOf(headers),
    status: 'rejected',
    reason: REJECTIONS[failure],
    at: now,
  });
  throw new AppError('inbound.signature_invalid', REJECTIONS[failure], { reason: failure });
}

/** A verified message whose body is not what the contract takes: logged `rejected`, nothing applied. */
export async function rejectBody(
  ctx: AppContext,
  source: InboundSourcesTable,
  headers: SignedHeaders,
  reason: string,
): Promise<void> {
  await logMessage(ctx.db, source, {
    webhookId: webhookIdOf(headers),
    status: 'rejected',
    reason: `invalid_body: ${reason}`.slice(0, 500),
    at: ctx.clock.now(),
  });
}

type MatchedShipment = ShipmentsTable;

/** The shipments of a batch by the number each checkpoint names, of the kind it names. */
interface Matches {
  byTracking: Map<string, MatchedShipment>;
  byCarrier: Map<string, MatchedShipment>;
  /** Every shipment found, locked for the transaction: applyCheckpointsIn takes them as they are. */
  locked: Map<string, ShipmentsTable>;
}

/**
 * The shipments the checkpoints name, in one query: by Waybill's `tracking_number` or by the
 * carrier's own `carrier_tracking_number` (as the checkpoint says which), within the source's
 * company, mode and (when it has one) merchant account only, as findShipmentByNumber (tracking)
 * finds one: another company's number, a shipment of the other mode or of another merchant match
 * nothing; of several shipments with one carrier number, the oldest. The rows are locked as they
 * are found (FOR UPDATE, in id order so two messages lock alike), whole, for applyCheckpointsIn.
 */
async function matchShipments(
  trx: Trx,
  source: InboundSourcesTable,
  checkpoints: readonly InboundCheckpoint[],
): Promise<Matches> {
  const numbers = (key: 'tracking_number' | 'carrier_tracking_number') => [
    ...new Set(checkpoints.flatMap((c) => (c[key] ? [c[key]] : []))),
  ];
  const tracking = numbers('tracking_number');
  const carrier = numbers('carrier_tracking_number');
  const matches: Matches = { byTracking: new Map(), byCarrier: new Map(), locked: new Map() };
  if (tracking.length === 0 && carrier.length === 0) return matches;
  let query = trx
    .selectFrom('shipments')
    .selectAll()
    .where('tenant_id', '=', source.tenant_id)
    .where('livemode', '=', source.livemode)
    .where((eb) =>
      eb.or([
        ...(tracking.length > 0 ? [eb('tracking_number', 'in', tracking)] : []),
        ...(carrier.length > 0 ? [eb('carrier_tracking_number', 'in', carrier)] : []),
      ]),
    );
  if (source.customer_account_id !== null) {
    query = query.where('customer_account_id', '=', source.customer_account_id);
  }
  const rows = await query.orderBy('id').forUpdate().execute();
  // Of several shipments with one carrier number, the oldest: the rows in the order they were made.
  rows.sort(
    (a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  for (const row of rows) {
    matches.locked.set(row.id, row);
    matches.byTracking.set(row.tracking_number, row);
    if (row.carrier_tracking_number !== null && !matches.byCarrier.has(row.carrier_tracking_number)) {
      matches.byCarrier.set(row.carrier_tracking_number, row);
    }
  }
  return matches;
}

function shipmentOf(checkpoint: InboundCheckpoint, matches: Matches): MatchedShipment | undefined {
  if (checkpoint.tracking_number) return matches.byTracking.get(checkpoint.tracking_number);
  if (checkpoint.carrier_tracking_number) return matches.byCarrier.get(checkpoint.carrier_tracking_number);
  return undefined;
}

/** A matched checkpoint as POST /v1/shipments/{id}/checkpoints takes it, with source `inbound`. */
function requestOf(
  source: InboundSourcesTable,
  shipment: MatchedShipment,
  checkpoint: InboundCheckpoint,
): ApplyCheckpointRequest {
  const { tracking_number: _t, carrier_tracking_number: _c, ...input } = checkpoint;
  return {
    tenantId: source.tenant_id,
    mode: source.livemode ? 'live' : 'test',
    customerAccountId: source.customer_account_id,
    shipmentId: shipment.id,
    input,
    source: 'inbound',
  };
}

const outcomeOf = (result: BatchCheckpointResult): Exclude<CheckpointOutcome, 'unmatched'> =>
  !result.created ? 'duplicate' : result.applied ? 'applied' : 'not_applied';

function statusOf(results: readonly CheckpointResult[]): {
  status: InboundMessageStatus;
  reason: string | null;
} {
  const unmatched = results.filter((r) => r.outcome === 'unmatched').length;
  if (unmatched === 0) return { status: 'applied', reason: null };
  return {
    status: 'partly_applied',
    reason: `${unmatched} of ${results.length} checkpoint${results.length === 1 ? '' : 's'} matched no shipment`,
  };
}

/**
 * A verified message: the same `webhook-id` again is logged `duplicate` and changes nothing; else
 * each checkpoint finds its shipment, and the matched ones are applied as one batch, in one
 * transaction with the message's log row.
 */
export async function receiveMessage(
  ctx: AppContext,
  source: InboundSourcesTable,
  webhookId: string,
  checkpoints: readonly InboundCheckpoint[],
): Promise<ReceiveAnswer> {
  const now = ctx.clock.now();
  let answer: ReceiveAnswer;
  try {
    answer = await receiveIn(ctx, source, webhookId, checkpoints, now);
  } catch (error) {
    if (!(error instanceof CheckpointRefused)) throw error;
    // Nothing of the batch was written (its transaction rolled back); the refusal is logged.
    const { index, error: refusal } = error;
    await rejectBody(ctx, source, { 'webhook-id': webhookId }, `/checkpoints/${index}: ${refusal.message}`);
    const errors = Array.isArray(refusal.extra.errors) ? (refusal.extra.errors as FieldError[]) : [];
    throw new AppError(
      refusal.code,
      `/checkpoints/${index}: ${refusal.message}`,
      {
        ...refusal.extra,
        errors: errors.map((e) => ({ ...e, path: `/checkpoints/${index}${e.path}` })),
      },
      refusal.status,
    );
  }
  runAfterCommit(ctx);
  return answer;
}

function receiveIn(
  ctx: AppContext,
  source: InboundSourcesTable,
  webhookId: string,
  checkpoints: readonly InboundCheckpoint[],
  now: Date,
): Promise<ReceiveAnswer> {
  return ctx.db.transaction().execute(async (trx) => {
    const id = newId('inm');
    const taken = await trx
      .insertInto('inbound_messages')
      .values({
        id,
        tenant_id: source.tenant_id,
        source_id: source.id,
        webhook_id: webhookId,
        status: 'applied',
        reason: null,
        results: '[]',
        created_at: now,
      })
      .onConflict((oc) =>
        oc
          .columns(['source_id', 'webhook_id', 'tenant_id'])
          .where('status', 'in', ['applied', 'partly_applied'])
          .doNothing(),
      )
      .returning('id')
      .executeTakeFirst();
    if (!taken) {
      await logMessage(trx, source, {
        webhookId,
        status: 'duplicate',
        reason: 'this webhook-id was received already; nothing changed',
        at: now,
      });
      return { accepted: 0, duplicates: checkpoints.length, unmatched: 0 };
    }
    const matched = await matchShipments(trx, source, checkpoints);
    // The matched checkpoints applied as one batch (applyCheckpointsIn: set-wise, in their order).
    const batch: Array<{ index: number; shipment: MatchedShipment }> = [];
    const requests: ApplyCheckpointRequest[] = [];
    for (const [index, checkpoint] of checkpoints.entries()) {
      const shipment = shipmentOf(checkpoint, matched);
      if (!shipment) continue;
      batch.push({ index, shipment });
      requests.push(requestOf(source, shipment, checkpoint));
    }
    let applied: BatchCheckpointResult[];
    try {
      applied = await applyCheckpointsIn(ctx, trx, requests, { locked: matched.locked });
    } catch (error) {
      // The refused checkpoint's place in the batch of matched ones, back to its place in the message.
      if (error instanceof CheckpointRefused) {
        throw new CheckpointRefused(batch[error.index]?.index ?? error.index, error.error);
      }
      throw error;
    }
    const results: CheckpointResult[] = checkpoints.map((_, index) => ({
      index,
      shipment_id: null,
      checkpoint_id: null,
      outcome: 'unmatched',
    }));
    for (const [i, { index, shipment }] of batch.entries()) {
      const result = applied[i] as BatchCheckpointResult;
      results[index] = {
        index,
        shipment_id: shipment.id,
        checkpoint_id: result.checkpoint.id,
        outcome: outcomeOf(result),
      };
    }
    const { status, reason } = statusOf(results);
    await trx
      .updateTable('inbound_messages')
      .set({ status, reason, results: JSON.stringify(results) })
      .where('id', '=', id)
      .where('tenant_id', '=', source.tenant_id)
      .execute();
    return {
      accepted: results.filter((r) => r.outcome === 'applied' || r.outcome === 'not_applied').length,
      duplicates: results.filter((r) => r.outcome === 'duplicate').length,
      unmatched: results.filter((r) => r.outcome === 'unmatched').length,
    };
  });
}

import { type ClaimedRow, endpointOf } from './claim.ts';
import type { DeliveryContext } from './context.ts';
import { buildMessage, storedHeaders, withEchoesMasked } from './message.ts';
import type { DeliveryOutcome } from './metrics.ts';
import { type FinishedAttempt, metricKind } from './record.ts';
import { MAX_ATTEMPTS } from './schedule.ts';
import { isSuccess, type Transport } from './sender.ts';

/** What an attempt did to its delivery, for the deliveries counter. */
export function outcomeOf(attempt: FinishedAttempt): DeliveryOutcome {
  if (isSuccess(attempt.result)) return 'succeeded';
  const gone = attempt.result.status_code === 410 && attempt.targetKind !== 'app_events';
  if (gone || attempt.delivery.attempt_count + 1 >= MAX_ATTEMPTS) return 'failed';
  return 'failed_attempt';
}

/** Sends a claimed row's message and answers the attempt to record. */
export async function attemptRow(
  ctx: DeliveryContext,
  row: ClaimedRow,
  transport: Transport,
  deadlineMs: number,
): Promise<FinishedAttempt> {
  const now = ctx.clock.now();
  const message = buildMessage(ctx, row, endpointOf(row), now);
  const kind = metricKind(row.kind);
  ctx.metrics.sendStarted(kind);
  const result = withEchoesMasked(
    message,
    await transport(row.endpoint_id, message, deadlineMs).finally(() => ctx.metrics.sendFinished(kind)),
  );
  ctx.metrics.attemptDuration(result.duration_ms / 1000, kind);
  return {
    delivery: row,
    endpointFailing: row.failing_since !== null,
    targetKind: row.kind,
    trigger: 'scheduled',
    attemptedAt: now,
    headers: storedHeaders(message),
    result,
  };
}

/** Where a delivery goes: a webhook endpoint, an app's events URL, or a `waybill listen` command. */
export type DeliveryKind = 'endpoint' | 'app_event' | 'listener';

/**
 * What became of one attempt or delivery:
 * - `succeeded`: the receiver answered 2xx; the delivery is done.
 * - `failed_attempt`: any other answer or none; the delivery is scheduled again.
 * - `failed`: the last attempt failed (schedule exhausted, or 410): the delivery is given up.
 * - `disabled`: the attempt disabled its endpoint (410 Gone, or the end of 3 days of failure).
 * - `cancelled`: a pending delivery cancelled because its endpoint was disabled.
 */
export type DeliveryOutcome = 'succeeded' | 'failed_attempt' | 'failed' | 'disabled' | 'cancelled';

/** What the engine reports as it sends (the operations module's Prometheus metrics implement it). */
export interface DeliveryMetrics {
  deliveryOutcome(kind: DeliveryKind, outcome: DeliveryOutcome, count?: number): void;
  attemptDuration(seconds: number, kind: DeliveryKind): void;
  sendStarted(kind: DeliveryKind): void;
  sendFinished(kind: DeliveryKind): void;
}

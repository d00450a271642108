import { sql } from 'kysely';
import type { Logger } from 'pino';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../../db/database.ts';
import type { DeliveryKind, DeliveryMetrics, DeliveryOutcome } from '../../delivery/metrics.ts';
import type { Clock } from '../../lib/clock.ts';
import type { HealthState } from './health.ts';

export type GrantType = 'authorization_code' | 'refresh_token' | 'other';

/** `issued`, `reuse_detected` (a spent code or refresh token again: the installation's tokens are revoked), or the RFC 6749 error. */
export type GrantOutcome =
  | 'issued'
  | 'reuse_detected'
  | 'invalid_grant'
  | 'invalid_client'
  | 'invalid_request'
  | 'invalid_scope'
  | 'unsupported_grant_type'
  | 'server_error';

const DELIVERY_KINDS: readonly DeliveryKind[] = ['endpoint', 'app_event', 'listener'];
const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = [
  'succeeded',
  'failed_attempt',
  'failed',
  'disabled',
  'cancelled',
];
const GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token', 'other'];
const GRANT_OUTCOMES: readonly GrantOutcome[] = [
  'issued',
  'reuse_detected',
  'invalid_grant',
  'invalid_client',
  'invalid_request',
  'invalid_scope',
  'unsupported_grant_type',
  'server_error',
];

/** What the queue gauges read at scrape time. */
interface QueueSnapshot {
  due: number;
  scheduled: number;
  oldestDueAgeSeconds: number;
}

export interface MetricsDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  health: HealthState;
}

/**
 * The process's Prometheus metrics (docs/operations.md lists each one and its alert). One registry
 * per AppContext, so that test instances in one process do not add up. Label values are closed
 * sets: route patterns, kinds and outcomes, never ids.
 */
export class WaybillMetrics implements DeliveryMetrics {
  readonly registry = new Registry();
  readonly #deps: MetricsDeps;
  #processDefaults = false;
  #snapshot: Promise<QueueSnapshot | null> | null = null;

  readonly #httpDuration = new Histogram({
    name: 'waybill_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route pattern and status class',
    labelNames: ['method', 'route', 'status_class'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly #deliveries = new Counter({
    name: 'waybill_webhook_deliveries_total',
    help: 'Webhook attempts and deliveries by kind and outcome (succeeded, failed_attempt, failed, disabled, cancelled)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly #attemptDuration = new Histogram({
    name: 'waybill_webhook_attempt_duration_seconds',
    help: 'Duration of one webhook attempt, connect to last byte read (10 s deadline)',
    labelNames: ['kind'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly #inFlight = new Gauge({
    name: 'waybill_webhook_sends_in_flight',
    help: 'Webhook requests this process has on the wire now',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly #grants = new Counter({
    name: 'waybill_oauth_grants_total',
    help: 'Token endpoint requests by grant type and outcome (issued, reuse_detected, or the RFC 6749 error)',
    labelNames: ['grant_type', 'outcome'] as const,
    registers: [this.registry],
  });

  constructor(deps: MetricsDeps) {
    this.#deps = deps;
    const metrics = this;
    new Gauge({
      name: 'waybill_webhook_queue_depth',
      help: 'Pending webhook deliveries: state="due" (due now, in flight included), state="scheduled" (waiting for a later retry)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        const snapshot = await metrics.#queueSnapshot();
        this.reset();
        if (!snapshot) return;
        this.set({ state: 'due' }, snapshot.due);
        this.set({ state: 'scheduled' }, snapshot.scheduled);
      },
    });
    new Gauge({
      name: 'waybill_webhook_oldest_due_age_seconds',
      help: 'How long the oldest due delivery has been waiting past its due time (0 when none is due)',
      registers: [this.registry],
      async collect() {
        const snapshot = await metrics.#queueSnapshot();
        this.reset();
        if (snapshot) this.set(snapshot.oldestDueAgeSeconds);
      },
    });
    new Gauge({
      name: 'waybill_worker_heartbeat_age_seconds',
      help: "Seconds since this process's delivery worker last turned its loop (absent without a worker)",
      registers: [this.registry],
      collect() {
        this.reset();
        const last = deps.health.workerHeartbeat?.();
        if (last) this.set(Math.max(0, (deps.clock.now().getTime() - last.getTime()) / 1000));
      },
    });
    // Every series exists from the start at 0, so that rate() and alerts see the first event.
    for (const kind of DELIVERY_KINDS) {
      for (const outcome of DELIVERY_OUTCOMES) this.#deliveries.inc({ kind, outcome }, 0);
      this.#inFlight.set({ kind }, 0);
    }
    for (const grant_type of GRANT_TYPES.slice(0, 2)) {
      for (const outcome of GRANT_OUTCOMES) this.#grants.inc({ grant_type, outcome }, 0);
    }
  }

  /** One HTTP answer; `route` is the route pattern (never the raw URL), or "unmatched". */
  httpRequest(method: string, route: string, statusCode: number, seconds: number): void {
    const statusClass = `${Math.floor(statusCode / 100)}xx`;
    this.#httpDuration.observe({ method, route, status_class: statusClass }, seconds);
  }

  /** An attempt or delivery reached `outcome` (`count` of them: cancellations come in bulk). */
  deliveryOutcome(kind: DeliveryKind, outcome: DeliveryOutcome, count = 1): void {
    if (count > 0) this.#deliveries.inc({ kind, outcome }, count);
  }

  /** One attempt took `seconds` (answer or not). */
  attemptDuration(seconds: number, kind: DeliveryKind): void {
    this.#attemptDuration.observe({ kind }, seconds);
  }

  /** A request went on the wire; pair every call with `sendFinished`. */
  sendStarted(kind: DeliveryKind): void {
    this.#inFlight.inc({ kind });
  }

  sendFinished(kind: DeliveryKind): void {
    this.#inFlight.dec({ kind });
  }

  /** A token endpoint request's result. */
  oauthGrant(grantType: string | undefined, outcome: GrantOutcome): void {
    const known = GRANT_TYPES.find((type) => type === grantType && type !== 'other');
    this.#grants.inc({ grant_type: known ?? 'other', outcome });
  }

  /**
   * The process's own figures (event loop lag, memory, CPU, handles), once per registry. Only the
   * process that serves /metrics collects them: the event loop monitor is a timer of its own.
   */
  collectProcessDefaults(): void {
    if (this.#processDefaults) return;
    this.#processDefaults = true;
    collectDefaultMetrics({ register: this.registry, prefix: 'waybill_' });
  }

  /** The Prometheus text exposition of every metric. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /**
   * One query per scrape, shared by the queue gauges (collected together), over the partial index
   * on next_attempt_at of pending deliveries. A failing database leaves the gauges out of the
   * scrape rather than failing it: the readiness check reports the database.
   */
  #queueSnapshot(): Promise<QueueSnapshot | null> {
    this.#snapshot ??= this.#readQueue().finally(() => {
      this.#snapshot = null;
    });
    return this.#snapshot;
  }

  async #readQueue(): Promise<QueueSnapshot | null> {
    const now = this.#deps.clock.now();
    try {
      const { rows } = await sql<{ due: number; scheduled: number; oldest_due: Date | string | null }>`
        SELECT count(*) FILTER (WHERE due_at <= ${now}) AS due,
          count(*) FILTER (WHERE due_at > ${now}) AS scheduled,
          min(due_at) FILTER (WHERE due_at <= ${now}) AS oldest_due
        FROM webhook_deliveries WHERE due_at IS NOT NULL`.execute(this.#deps.db);
      const row = rows[0];
      if (!row) return { due: 0, scheduled: 0, oldestDueAgeSeconds: 0 };
      const oldest = row.oldest_due === null ? null : new Date(row.oldest_due);
      return {
        due: Number(row.due),
        scheduled: Number(row.scheduled),
        oldestDueAgeSeconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0,
      };
    } catch (err) {
      this.#deps.log.warn({ err }, 'reading the delivery queue for metrics failed');
      return null;
    }
  }
}

/**
 * What a tenant may see about an attempt that got no answer: our codes, never socket messages. A
 * broker's refusal (destinations/) carries the broker's reason in the response body.
 */
export type SendError =
  | 'timeout'
  | 'connection_failed'
  | 'dns_failed'
  | 'address_not_allowed'
  | 'tls_failed'
  | 'broker_refused'
  | 'broker_unroutable'
  | 'auth_failed';

/**
 * What a target is: a company's, merchant's or installation's endpoint, an app's events URL, or a
 * `waybill listen` command connected from a developer's machine (modules/listeners).
 */
export type TargetKind = 'endpoint' | 'app_events' | 'listener' | 'subscription';

export interface WebhookEndpointsTable {
  id: string;
  kind: TargetKind;
  /**
   * Null on an app's events target only (it belongs to no company, has no URL or secret of its own
   * and is read through delivery_targets); every query that reads endpoints filters by tenant, so
   * the endpoint code sees these three as always set.
   */
  tenant_id: string;
  customer_account_id: string | null;
  installation_id: string | null;
  livemode: boolean;
  url: string;
  description: string | null;
  /** jsonb array of event type names; written with JSON.stringify. */
  event_types: unknown;
  /** The event version its messages are built in (migration 0087; the column's default 2026-11-01). */
  api_version?: string;
  enabled: boolean;
  disabled_reason: 'gone' | 'failing' | 'manual' | null;
  /** AES-256-GCM sealed `whsec_` secret (lib/crypto SecretBox). */
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  /** Start of the current streak of failures; cleared by any 2xx (the 3-day disable rule). */
  failing_since: Date | null;
  /** When the current streak was told as failing (after 24 h; once per streak). */
  failing_noticed_at: Date | null;
  created_by: string | null;
  /** jsonb: the endpoint's filter as written (issue 32); null for none. */
  filter?: unknown;
  /** The filter compiled to an SQL/JSON path predicate, read by the fan-out (migration 0061). */
  filter_path?: string | null;
  /** jsonb: the values the predicate names. */
  filter_vars?: unknown;
  /** Which subscription of the app's active version an app subscription target is (issue 32). */
  subscription_index?: number | null;
  /** The app of an app events target. */
  app_id: string | null;
  /** Suspension of the app holds deliveries to its targets (not lost: sent after reinstating). */
  held: boolean;
  /** Messages a second at most, in any one-second window, across every worker; null: no limit. */
  rate_limit: number | null;
  /** `per_shipment`: one shipment's messages go one at a time, in the order of their events. */
  ordering: 'none' | 'per_shipment';
  /** The custom headers, a JSON object of names and values, sealed (lib/crypto SecretBox); null: none. */
  headers_sealed: string | null;
  /**
   * A broker destination (issue 43, migration 0070), sealed whole: type, URL with credentials,
   * exchange and routing key or subject; null (or absent) for https.
   */
  destination_sealed?: string | null;
  /** Nothing is sent before this (a receiver's Retry-After on 429 or 503). */
  paused_until: Date | null;
  /** A listener's last sign of life; it is removed once this is older than the grace period. */
  listener_seen_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The view the engine sends through: where a target's messages go and the secrets that sign them. */
export interface DeliveryTargetsView {
  id: string;
  kind: TargetKind;
  app_id: string | null;
  enabled: boolean;
  held: boolean;
  failing_since: Date | null;
  url: string | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  /** The endpoint's custom headers, sealed (migration 0034); null: none. */
  headers_sealed: string | null;
  tenant_id: string;
}

export interface WebhookDeliveriesTable {
  id: string;
  /** The endpoint's company (an app's events: the app's id), in every key (migration 0080). */
  tenant_id: string;
  endpoint_id: string;
  /** The webhook-id: the event's id (test messages get an evt_ id of their own). */
  event_id: string;
  event_type: string;
  /**
   * The envelope as sent, byte for byte; null for a shipment event's delivery, which sends its
   * event's (migration 0016): read it through `deliveryPayload`.
   */
  payload: string | null;
  /**
   * '2026-12-01' where its target is pinned to it and its event has a `latest_payload` (migration
   * 0097): with no payload of its own, it sends that one. Null: its own payload or its event's.
   */
  api_version?: string | null;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempt_count: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_attempt_at: Date | null;
  /**
   * Its time in the queue (migration 0080): set exactly while it is pending with a next attempt
   * (a CHECK holds every writer to it), the claim's index holds only these rows. Its own
   * `next_attempt_at`, or later while it waits behind its shipment's line.
   */
  due_at: Date | null;
  /** The lease of the worker that claimed it: no lock is held while the request is in flight. */
  locked_by?: string | null;
  locked_until?: Date | null;
  /** Its place in its shipment's line at an ordered target (set by the fan-out). */
  line_shipment_id?: string | null;
  line_seq?: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookAttemptsTable {
  id: string;
  tenant_id: string;
  delivery_id: string;
  endpoint_id: string;
  attempted_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: SendError | null;
  /** The first 4 KB of the answer as received (bytea). */
  response_body: Uint8Array | null;
  trigger: 'scheduled' | 'replay' | 'test';
  request_headers: unknown;
}

/**
 * Every attempt: the rows of `webhook_attempts` and the first attempts kept in their deliveries
 * (migration 0065). `indexed_at` is what each part's index orders by: the attempt's time for a
 * row, the delivery's making (at most a day earlier) for one kept in its delivery. A read by time
 * window bounds it too (attemptedBetween), so that both parts are read by index.
 */
export interface WebhookAttemptLogView extends WebhookAttemptsTable {
  indexed_at: Date;
}

export interface WebhooksTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_attempt_log: WebhookAttemptLogView;
  delivery_targets: DeliveryTargetsView;
}

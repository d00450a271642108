export interface WebhookEndpointsTable {
  id: string;
  tenant_id: string;
  customer_account_id: string | null;
  installation_id: string | null;
  livemode: boolean;
  url: string;
  description: string | null;
  /** jsonb array of event type names; written with JSON.stringify. */
  event_types: unknown;
  enabled: boolean;
  disabled_reason: 'gone' | 'failing' | 'manual' | null;
  /** AES-256-GCM sealed `whsec_` secret (lib/crypto SecretBox). */
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  /** Start of the current streak of failures; cleared by any 2xx (the 3-day disable rule). */
  failing_since: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  /** The webhook-id: the event's id (test messages get an evt_ id of their own). */
  event_id: string;
  event_type: string;
  /** The envelope as sent, byte for byte. */
  payload: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempt_count: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_attempt_at: Date | null;
  /** The lease of the worker that claimed it: no lock is held while the request is in flight. */
  locked_by: string | null;
  locked_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  attempted_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: 'timeout' | 'connection_failed' | 'dns_failed' | 'address_not_allowed' | 'tls_failed' | null;
  response_body: string | null;
  trigger: 'scheduled' | 'replay' | 'test';
  request_headers: unknown;
}

export interface WebhooksTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}

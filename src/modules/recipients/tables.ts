import type { Generated } from 'kysely';

/** The recipients module's tables (migration 0092). */
export interface TrackingTokensTable {
  tenant_id: string;
  /** Opaque and random: the last segment of the shipment's tracking_url. */
  token: string;
  shipment_id: string;
  created_at: Date;
}

export interface RecipientSettingsTable {
  tenant_id: string;
  display_name: string | null;
  accent_color: string | null;
  support_url: string | null;
  logo_name: string | null;
  notifications_enabled: Generated<boolean>;
  /** jsonb array of milestone names. */
  notification_events: Generated<unknown>;
  updated_at: Date;
}

export interface CompanyLogosTable {
  tenant_id: string;
  name: string;
  content_type: string;
  content: Buffer;
  created_at: Date;
}

export interface RecipientNotificationsTable {
  id: string;
  tenant_id: string;
  shipment_id: string;
  livemode: boolean;
  event: string;
  /** The address while the mail may still be sent; null once sent, given up or erased. */
  to_address: string | null;
  to_masked: string;
  /** Keyed hash of the address: what an unsubscribe is kept by. */
  address_hash: string;
  language: string;
  status: 'queued' | 'sent' | 'failed' | 'suppressed';
  reason: string | null;
  attempts: Generated<number>;
  next_attempt_at: Date;
  locked_until: Date | null;
  unsubscribe_token: string;
  created_at: Date;
  sent_at: Date | null;
}

export interface RecipientUnsubscribesTable {
  tenant_id: string;
  address_hash: string;
  created_at: Date;
}

export interface RecipientsTables {
  tracking_tokens: TrackingTokensTable;
  recipient_settings: RecipientSettingsTable;
  company_logos: CompanyLogosTable;
  recipient_notifications: RecipientNotificationsTable;
  recipient_unsubscribes: RecipientUnsubscribesTable;
}

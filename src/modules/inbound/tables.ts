export interface InboundSourcesTable {
  id: string;
  tenant_id: string;
  customer_account_id: string | null;
  livemode: boolean;
  name: string;
  carrier_code: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export type InboundMessageStatus = 'applied' | 'duplicate' | 'partly_applied' | 'rejected';

export interface InboundMessagesTable {
  id: string;
  tenant_id: string;
  source_id: string;
  webhook_id: string | null;
  status: InboundMessageStatus;
  reason: string | null;
  /** jsonb array of {index, shipment_id, checkpoint_id, outcome}; written with JSON.stringify. */
  results: unknown;
  /** When the message arrived (its `received_at`). */
  created_at: Date;
}

export interface InboundTables {
  inbound_sources: InboundSourcesTable;
  inbound_messages: InboundMessagesTable;
}

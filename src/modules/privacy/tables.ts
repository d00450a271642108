export interface PrivacyRequestsTable {
  id: string;
  tenant_id: string;
  kind: 'data_request' | 'redact';
  recipient_email: string | null;
  recipient_phone: string | null;
  /** At creation: `no_apps_to_tell` or `messages_queued`; what the apps got is read from the deliveries. */
  status: string;
  shipment_count: number;
  requested_by: string | null;
  created_at: Date;
  completed_at: Date | null;
}

/** One app-event message a request made: a delivery of the engine. */
export interface PrivacyRequestMessagesTable {
  privacy_request_id: string;
  delivery_id: string;
  tenant_id: string;
  app_id: string;
  installation_id: string;
  shipment_count: number;
}

export interface PrivacyTables {
  privacy_requests: PrivacyRequestsTable;
  privacy_request_messages: PrivacyRequestMessagesTable;
}

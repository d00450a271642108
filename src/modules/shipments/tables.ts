export interface ShipmentsTable {
  id: string;
  tenant_id: string;
  customer_account_id: string | null;
  livemode: boolean;
  tracking_number: string;
  status: string;
  external_ref: string | null;
  recipient_name: string;
  recipient_email: string | null;
  recipient_phone: string | null;
  payment_mode: string;
  cod_amount_minor: number | null;
  currency: string;
  /** jsonb array; written with JSON.stringify. */
  parcels: unknown;
  exception_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface EventsTable {
  id: string;
  tenant_id: string;
  livemode: boolean;
  type: string;
  shipment_id: string | null;
  customer_account_id: string | null;
  /** The envelope exactly as it is signed and sent. */
  payload: string;
  created_at: Date;
}

export interface ShipmentsTables {
  shipments: ShipmentsTable;
  events: EventsTable;
}

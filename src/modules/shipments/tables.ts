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
  /** Tracking fields (migration 0086): jsonb, written with JSON.stringify, or null. */
  carrier: unknown;
  carrier_tracking_number: string | null;
  /** jsonb; its line1 is personal data (erased with the recipient's name). */
  destination: unknown;
  sub_status: string | null;
  estimated_delivery: unknown;
  proof_of_delivery: unknown;
  /** A copy of the newest checkpoint as the API presents it (jsonb). */
  latest_checkpoint: unknown;
  /** The newest checkpoint's occurred_at: an older one is not applied. */
  latest_checkpoint_at: Date | null;
  /** The last checkpoint or status move (a stall is measured from it). */
  activity_at: Date | null;
  /** When the current stall was told (once per stall); null while none is. */
  stall_reported_at: Date | null;
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
  /**
   * The 2026-12-01 envelope of an event that has both versions (migration 0097), sent to the
   * targets pinned to it; null where `payload` is already of that version.
   */
  latest_payload?: string | null;
  created_at: Date;
}

/** A shipment's timeline (migration 0086; src/modules/tracking). */
export interface ShipmentCheckpointsTable {
  id: string;
  tenant_id: string;
  shipment_id: string;
  occurred_at: Date;
  /** jsonb or null. */
  location: unknown;
  message: string;
  status: string | null;
  sub_status: string | null;
  /** jsonb or null. */
  estimated_delivery: unknown;
  source: string;
  external_id: string | null;
  applied: boolean;
  created_at: Date;
}

/** A test shipment's walk through a scenario (migration 0088; src/modules/tracking/simulation.ts). */
export interface ShipmentSimulationsTable {
  tenant_id: string;
  shipment_id: string;
  id: string;
  scenario: string;
  /** The scenario's next checkpoint, from 0. */
  step: number;
  next_at: Date;
  created_at: Date;
}

export interface ShipmentsTables {
  shipments: ShipmentsTable;
  events: EventsTable;
  shipment_checkpoints: ShipmentCheckpointsTable;
  shipment_simulations: ShipmentSimulationsTable;
}

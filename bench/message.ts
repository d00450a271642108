import { newId } from '../src/lib/ids.ts';
import { buildEnvelope } from '../src/modules/shipments/events.ts';

/** The shipment in every benchmarked message: with the envelope, about 1 KB of JSON. */
export function shipmentData(i: number) {
  return {
    status: 'in_transit',
    previous_status: 'picked_up',
    shipment: {
      id: newId('shp'),
      tracking_number: `WB${String(i).padStart(10, '0')}`,
      status: 'in_transit',
      external_ref: `order-${i}`,
      customer_account_id: null,
      recipient_name: 'Ada Lovelace',
      recipient_email: 'ada@example.com',
      recipient_phone: '+34600000000',
      payment_mode: 'cod',
      cod_amount_minor: 4599,
      currency: 'EUR',
      parcels: [{ weight_grams: 1200, length_mm: 300, width_mm: 200, height_mm: 100, reference: 'box-1' }],
      livemode: true,
      exception_reason: null,
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    },
  };
}

/** What the peers queue: the same envelope Waybill stores and sends, byte for byte in shape. */
export interface QueuedMessage {
  id: string;
  body: string;
}

export function peerMessages(count: number, tenantId: string): QueuedMessage[] {
  return Array.from({ length: count }, (_, i) => {
    const id = newId('evt');
    const body = buildEnvelope({
      id,
      type: 'shipment.status_changed',
      createdAt: new Date(),
      tenantId,
      livemode: true,
      data: shipmentData(i),
    });
    return { id, body };
  });
}

import type { AppContext } from '../../context.ts';
import type { Shipment } from '../shipments/service.ts';
import { trackingUrls } from './tokens.ts';

export type ShipmentWithTrackingUrl = Shipment & { tracking_url: string };

/** The REST answer: each shipment with its tracking_url (issue 52). */
export async function withTrackingUrls(
  ctx: AppContext,
  tenantId: string,
  shipments: Shipment[],
): Promise<ShipmentWithTrackingUrl[]> {
  const urls = await trackingUrls(
    ctx,
    tenantId,
    shipments.map((shipment) => shipment.id),
  );
  return shipments.map((shipment) => ({ ...shipment, tracking_url: urls.get(shipment.id) ?? '' }));
}

export async function withTrackingUrl(
  ctx: AppContext,
  tenantId: string,
  shipment: Shipment,
): Promise<ShipmentWithTrackingUrl> {
  const [answer] = await withTrackingUrls(ctx, tenantId, [shipment]);
  return answer ?? { ...shipment, tracking_url: '' };
}

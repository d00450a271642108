import type { AppContext } from '../../context.ts';
import { trackingUrls } from './tokens.ts';

export type WithTrackingUrl<S> = S & { tracking_url: string };

/** The REST answer: each shipment with its tracking_url (issue 52). */
export async function withTrackingUrls<S extends { id: string }>(
  ctx: AppContext,
  tenantId: string,
  shipments: S[],
): Promise<WithTrackingUrl<S>[]> {
  const urls = await trackingUrls(
    ctx,
    tenantId,
    shipments.map((shipment) => shipment.id),
  );
  return shipments.map((shipment) => ({ ...shipment, tracking_url: urls.get(shipment.id) ?? '' }));
}

export async function withTrackingUrl<S extends { id: string }>(
  ctx: AppContext,
  tenantId: string,
  shipment: S,
): Promise<WithTrackingUrl<S>> {
  const [answer] = await withTrackingUrls(ctx, tenantId, [shipment]);
  return answer ?? { ...shipment, tracking_url: '' };
}

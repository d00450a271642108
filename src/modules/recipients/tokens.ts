import type { AppContext, Trx } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { randomBase62 } from '../../lib/ids.ts';

/** 24 base62 characters: 142 random bits, derived from nothing (CONTRACT.md "Recipients"). */
const TOKEN_LENGTH = 24;

/** What a token in a URL may look like (new ones are base62, those of migration 0092 hex). */
export const TOKEN_PATTERN = /^[A-Za-z0-9]{20,64}$/;

export function trackingUrl(webUrl: string, token: string): string {
  return `${webUrl}/t/${token}`;
}

/** Gives the shipment a new token, replacing any other: the old link then finds nothing. */
export async function issueToken(
  trx: Trx | Db,
  shipment: { tenantId: string; shipmentId: string },
  at: Date,
): Promise<string> {
  const token = randomBase62(TOKEN_LENGTH);
  await trx
    .deleteFrom('tracking_tokens')
    .where('tenant_id', '=', shipment.tenantId)
    .where('shipment_id', '=', shipment.shipmentId)
    .execute();
  await trx
    .insertInto('tracking_tokens')
    .values({ tenant_id: shipment.tenantId, token, shipment_id: shipment.shipmentId, created_at: at })
    .execute();
  return token;
}

/** New tokens for these shipments of one company (an erasure: the links it handed out go dead). */
export async function rotateTokens(
  trx: Trx,
  tenantId: string,
  shipmentIds: readonly string[],
  at: Date,
): Promise<void> {
  for (const shipmentId of shipmentIds) await issueToken(trx, { tenantId, shipmentId }, at);
}

/** The tracking URLs of shipments of one company, by shipment id (one issued where one is missing). */
export async function trackingUrls(
  ctx: AppContext,
  tenantId: string,
  shipmentIds: readonly string[],
): Promise<Map<string, string>> {
  const urls = new Map<string, string>();
  if (shipmentIds.length === 0) return urls;
  const rows = await ctx.db
    .selectFrom('tracking_tokens')
    .select(['shipment_id', 'token'])
    .where('tenant_id', '=', tenantId)
    .where('shipment_id', 'in', [...shipmentIds])
    .execute();
  for (const row of rows) urls.set(row.shipment_id, trackingUrl(ctx.config.webUrl, row.token));
  // A shipment made before its token's transaction could reach it (none should be): issued lazily.
  for (const shipmentId of shipmentIds) {
    if (urls.has(shipmentId)) continue;
    const token = await issueToken(ctx.db, { tenantId, shipmentId }, ctx.clock.now());
    urls.set(shipmentId, trackingUrl(ctx.config.webUrl, token));
  }
  return urls;
}

/** The shipment a token opens, or null (unknown, rotated, or not a token at all). */
export async function shipmentOfToken(
  db: Db,
  token: string,
): Promise<{ tenantId: string; shipmentId: string } | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const row = await db
    .selectFrom('tracking_tokens')
    .select(['tenant_id', 'shipment_id'])
    .where('token', '=', token)
    .executeTakeFirst();
  return row ? { tenantId: row.tenant_id, shipmentId: row.shipment_id } : null;
}

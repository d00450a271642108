import type { AppContext } from '../../context.ts';
import { DAY } from '../../lib/clock.ts';
import { newSigningSecret } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { hashSecret, newSecret } from '../../lib/ids.ts';
import type { AppsTable } from '../oauth/tables.ts';
import type { ApiVersion } from '../shipments/events.ts';
import { ownedAppRow } from './registry.ts';
import { type App, updateApp } from './service.ts';

/** After an events secret rotation the previous one keeps signing this long (spec section 8). */
export const EVENTS_SECRET_OVERLAP_MS = DAY;

/**
 * A new client secret, shown once. The old hash is replaced in the same statement, so the old
 * secret stops working at once (spec 2.1).
 */
export async function rotateClientSecret(
  ctx: AppContext,
  developerId: string,
  appId: string,
): Promise<{ client_secret: string }> {
  const row = await ownedAppRow(ctx, developerId, appId);
  if (row.kind !== 'confidential') throw new AppError('app.not_confidential');
  const secret = newSecret('aps_');
  await ctx.db
    .updateTable('apps')
    .set({ client_secret_hash: hashSecret(secret), updated_at: ctx.clock.now() })
    .where('id', '=', row.id)
    .execute();
  return { client_secret: secret };
}

/** PUT /events: the events URL alone, with the same checks and review lock as any other edit. */
export async function setEventsUrl(
  ctx: AppContext,
  developerId: string,
  appId: string,
  url: string,
  apiVersion?: ApiVersion,
): Promise<App> {
  return updateApp(ctx, developerId, appId, {
    events_url: url,
    ...(apiVersion ? { events_api_version: apiVersion } : {}),
  });
}

export async function revealEventsSecret(
  ctx: AppContext,
  developerId: string,
  appId: string,
): Promise<{ secret: string }> {
  const row = await ownedAppRow(ctx, developerId, appId);
  return { secret: ctx.secrets.open(row.events_secret_sealed) };
}

/** A new events secret; the previous one keeps signing for 24 hours so the app can switch over. */
export async function rotateEventsSecret(
  ctx: AppContext,
  developerId: string,
  appId: string,
): Promise<{ secret: string }> {
  const row = await ownedAppRow(ctx, developerId, appId);
  const secret = newSigningSecret();
  const now = ctx.clock.now();
  await ctx.db
    .updateTable('apps')
    .set({
      events_secret_sealed: ctx.secrets.seal(secret),
      events_previous_secret_sealed: row.events_secret_sealed,
      events_previous_secret_expires_at: new Date(now.getTime() + EVENTS_SECRET_OVERLAP_MS),
      updated_at: now,
    })
    .where('id', '=', row.id)
    .execute();
  return { secret };
}

/**
 * Every secret that signs the app's events now: the current one, and the previous one during the
 * 24 hours after a rotation. App-event delivery (next issue) signs with each.
 */
export function eventsSigningSecrets(
  ctx: AppContext,
  row: Pick<
    AppsTable,
    'events_secret_sealed' | 'events_previous_secret_sealed' | 'events_previous_secret_expires_at'
  >,
): string[] {
  const secrets = [ctx.secrets.open(row.events_secret_sealed)];
  const expires = row.events_previous_secret_expires_at;
  if (row.events_previous_secret_sealed && expires && expires.getTime() > ctx.clock.now().getTime()) {
    secrets.push(ctx.secrets.open(row.events_previous_secret_sealed));
  }
  return secrets;
}

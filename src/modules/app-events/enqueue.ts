import { sql } from 'kysely';
import type { AppContext, Trx } from '../../context.ts';
import { notifyWorkers } from '../../delivery/fanout.ts';
import { newId } from '../../lib/ids.ts';
import { type ApiVersion, buildEnvelope, isApiVersion } from '../shipments/events.ts';

/** Spec section 6: the events an app receives at its events URL. */
export const APP_EVENT_TYPES = [
  'app.uninstalled',
  'app.scopes_updated',
  'customer.data_request',
  'customer.redact',
] as const;
export type AppEventType = (typeof APP_EVENT_TYPES)[number];

/** The tenant_id of a test message: no real company (spec 6.8). */
export const NO_COMPANY = '00000000-0000-0000-0000-000000000000';

export interface AppEvent {
  appId: string;
  type: AppEventType;
  /** The company the event concerns (the envelope's tenant_id). */
  tenantId: string;
  data: Record<string, unknown>;
  test?: boolean;
}

/**
 * The app's events target: a row of the delivery engine (kind 'app_events') whose URL and secrets
 * are the app's own (the delivery_targets view). Made the first time the app gets an event; held
 * from the start when the app is suspended.
 */
export async function appEventsTarget(trx: Trx, appId: string, now: Date): Promise<string> {
  await sql`
    INSERT INTO webhook_endpoints (id, kind, app_id, tenant_id, livemode, url, event_types, enabled,
      secret_sealed, held, created_at, updated_at)
    SELECT ${newId('we')}, 'app_events', a.id, a.id, true, NULL, '[]'::jsonb, true, NULL,
      a.status = 'suspended', ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
    FROM apps a WHERE a.id = ${appId}
    ON CONFLICT (app_id, tenant_id) WHERE kind = 'app_events' DO NOTHING
  `.execute(trx);
  const row = await trx
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('app_id', '=', appId)
    .where('tenant_id', '=', appId)
    .where('kind', '=', 'app_events')
    .executeTakeFirstOrThrow();
  return row.id;
}

/**
 * Queues app events as deliveries of the one engine (issue 8): same signing, retries, log and
 * replay as webhook endpoints. A test message is not queued (`due: false`): it is sent at once by
 * the caller. The caller commits and then calls runAfterCommit to wake this process's worker.
 */
export async function enqueueAppEvents(
  ctx: AppContext,
  trx: Trx,
  events: readonly AppEvent[],
  options: { due: boolean } = { due: true },
): Promise<string[]> {
  if (events.length === 0) return [];
  const now = ctx.clock.now();
  const targets = new Map<string, string>();
  const appIds = [...new Set(events.map((e) => e.appId))];
  for (const appId of appIds) targets.set(appId, await appEventsTarget(trx, appId, now));
  // Each app's events URL is pinned to a version (migration 0096): its envelopes say which.
  const versions = new Map<string, ApiVersion>(
    (
      await trx.selectFrom('apps').select(['id', 'events_api_version']).where('id', 'in', appIds).execute()
    ).map((row) => [row.id, isApiVersion(row.events_api_version) ? row.events_api_version : '2026-11-01']),
  );
  const rows = events.map((event) => {
    const eventId = newId('evt');
    return {
      id: newId('dlv'),
      // An app's events target is a tenant of its own, named by the app (migration 0080).
      tenant_id: event.appId,
      endpoint_id: targets.get(event.appId) as string,
      event_id: eventId,
      event_type: event.type,
      payload: buildEnvelope({
        apiVersion: versions.get(event.appId) ?? '2026-11-01',
        id: eventId,
        type: event.type,
        tenantId: event.tenantId,
        livemode: true,
        data: event.data,
        createdAt: now,
        ...(event.test ? { test: true } : {}),
      }),
      status: 'pending' as const,
      attempt_count: 0,
      next_attempt_at: options.due ? now : null,
      due_at: options.due ? now : null,
      last_status_code: null,
      last_attempt_at: null,
      created_at: now,
      updated_at: now,
    };
  });
  await trx.insertInto('webhook_deliveries').values(rows).execute();
  if (options.due) await notifyWorkers(ctx, trx);
  return rows.map((row) => row.id);
}

import type { AppContext } from '../../context.ts';
import { disableEndpoint, enableEndpoint } from '../../delivery/lifecycle.ts';
import { applyOrdering } from '../../delivery/ordering.ts';
import { metricKind } from '../../delivery/record.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { isApiVersion } from '../shipments/events.ts';
import {
  checkCustomHeaders,
  checkOrdering,
  checkRateLimit,
  headersRequired,
  openHeaders,
  sealHeaders,
} from './controls.ts';
import { destinationColumns } from './endpoint-destination.ts';
import {
  checkEventTypes,
  checkTypesInVersion,
  cleanDescription,
  eventTypesOf,
  filterColumns,
  findVisibleEndpoint,
  presentOne,
  storedFilter,
  type UpdateEndpointInput,
  type WebhookEndpoint,
} from './endpoints.ts';

/**
 * PATCH: url and types are checked before anything changes; enabling clears the disable reason,
 * disabling records `manual` and cancels what waits (lifecycle.ts, shared with the worker's disables).
 */
export async function updateEndpoint(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
  input: UpdateEndpointInput,
): Promise<WebhookEndpoint> {
  requireScope(access, 'webhooks:write');
  const before = await findVisibleEndpoint(ctx.db, access, id);
  const eventTypes = input.event_types === undefined ? undefined : checkEventTypes(input.event_types);
  // A new URL or destination replaces the old one whole (checked, and its address guarded, here).
  const target =
    input.url !== undefined || input.destination !== undefined
      ? await destinationColumns(ctx, input, before)
      : undefined;
  const url = target?.url;
  const rateLimit = input.rate_limit === undefined ? undefined : checkRateLimit(input.rate_limit);
  const ordering = input.ordering === undefined ? undefined : checkOrdering(input.ordering);
  const now = ctx.clock.now();
  let cancelled: number | null = null;
  const row = await ctx.db.transaction().execute(async (trx) => {
    const current = await findVisibleEndpoint(trx, access, id, { forUpdate: true });
    const stored = openHeaders(ctx.secrets, current);
    const newUrl = url !== undefined && url !== current.url;
    if (newUrl && stored !== null && input.headers === undefined) throw headersRequired();
    const headers =
      input.headers === undefined ? undefined : checkCustomHeaders(input.headers, stored, { newUrl });
    // The types and the version agree: new types in the old version, or an old version for the types.
    const version =
      input.api_version ?? (isApiVersion(current.api_version) ? current.api_version : '2026-11-01');
    if (input.api_version !== undefined || eventTypes !== undefined)
      checkTypesInVersion(eventTypes ?? eventTypesOf(current), version);
    // The filter is checked against the types and version the endpoint will have: new types or
    // another version keep the old filter only if its paths are in their schemas too.
    const filter =
      input.filter !== undefined || eventTypes !== undefined || input.api_version !== undefined
        ? filterColumns(
            input.filter !== undefined ? input.filter : storedFilter(current),
            eventTypes ?? eventTypesOf(current),
            version,
          )
        : undefined;
    // Each statement names the endpoint's company: one shard on Citus.
    if (input.enabled === false && current.enabled)
      cancelled = await disableEndpoint(trx, id, 'manual', now, current.tenant_id);
    if (input.enabled === true && !current.enabled) await enableEndpoint(trx, id, now, current.tenant_id);
    if (ordering !== undefined && ordering !== current.ordering)
      await applyOrdering(trx, { id, tenantId: current.tenant_id }, ordering);
    return trx
      .updateTable('webhook_endpoints')
      .set({
        ...(target !== undefined ? target : {}),
        ...(eventTypes !== undefined ? { event_types: JSON.stringify(eventTypes) } : {}),
        ...(input.api_version !== undefined ? { api_version: input.api_version } : {}),
        ...(input.description !== undefined ? { description: cleanDescription(input.description) } : {}),
        ...(rateLimit !== undefined ? { rate_limit: rateLimit } : {}),
        ...(ordering !== undefined ? { ordering } : {}),
        ...(headers !== undefined ? { headers_sealed: sealHeaders(ctx.secrets, headers) } : {}),
        ...(filter ?? {}),
        updated_at: now,
      })
      .where('id', '=', id)
      .where('tenant_id', '=', current.tenant_id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  if (cancelled !== null) ctx.metrics.deliveryOutcome(metricKind(row.kind), 'cancelled', cancelled);
  return presentOne(ctx, row);
}

import type { AppContext, Trx } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { newestFirst } from '../../db/paging.ts';
import type { Destination, DestinationInput } from '../../delivery/destinations/spec.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import { AppError, type FieldError, validationError } from '../../lib/errors.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { canSee, requireScope, type TenantAccess } from '../accounts/access.ts';
import {
  type EndpointGrantState,
  endpointGrantStates,
  type HeldReason,
  NOT_HELD,
} from '../oauth/installation-grants.ts';
import { type ApiVersion, isApiVersion, sunsetOf } from '../shipments/events.ts';
import { type Ordering, openHeaders, presentHeaders } from './controls.ts';
import { presentDestination } from './endpoint-destination.ts';
import { inVersion } from './event-schema.ts';
import { eventDefinition, isEventType } from './event-types.ts';
import { compileFilter } from './filter.ts';

export interface WebhookEndpoint {
  id: string;
  url: string;
  /** Where messages go (CONTRACT.md "Destinations"); a broker URL's password masked. */
  destination: Destination;
  description: string | null;
  event_types: string[];
  api_version: ApiVersion;
  /** When its version goes away, if that version is deprecated (the owner's list of what to move); else null. */
  api_version_sunset_at: string | null;
  livemode: boolean;
  enabled: boolean;
  disabled_reason: 'gone' | 'failing' | 'manual' | null;
  installation_id: string | null;
  /**
   * Why an installation's endpoint receives nothing (decision 0024): `app_suspended`, or
   * `needs_approval` (the approver left the company or lost the role); null otherwise.
   */
  held_reason: HeldReason | null;
  /** Subscribed types the installation's grant does not allow now: they are not sent here. */
  withheld_event_types: string[];
  customer_account_id: string | null;
  /** CONTRACT.md: a `waybill listen` endpoint is listed with kind `cli`. */
  kind: 'endpoint' | 'cli';
  rate_limit: number | null;
  ordering: Ordering;
  /** The filter as written (CONTRACT.md "Apps as code"), or null. */
  filter: Record<string, unknown> | null;
  /** Names and values; credentials masked. */
  headers: Record<string, string>;
  paused_until: string | null;
  created_at: string;
  updated_at: string;
}

/** The receiver's delivery controls (CONTRACT.md), settable at creation and by PATCH. */
export interface DeliveryControlsInput {
  rate_limit?: number | null;
  ordering?: Ordering;
  /** Replaces the whole set; null or {} removes them. */
  headers?: Record<string, string> | null;
}

export interface CreateEndpointInput extends DeliveryControlsInput {
  /** An https URL; or `destination` (one of the two). */
  url?: string;
  destination?: DestinationInput;
  event_types: string[];
  description?: string | null;
  filter?: object | null;
  api_version?: ApiVersion;
}

export interface UpdateEndpointInput extends DeliveryControlsInput {
  url?: string;
  /** Replaces the destination as a whole. */
  destination?: DestinationInput;
  event_types?: string[];
  api_version?: ApiVersion;
  description?: string | null;
  enabled?: boolean;
  /** null removes the filter. */
  filter?: object | null;
}

/**
 * The filter's columns, checked and compiled against the endpoint's types in its version
 * (filter.ts); none for null. The fan-out evaluates it on that version's envelope (migration 0097).
 */
export function filterColumns(filter: unknown, eventTypes: readonly string[], version: ApiVersion) {
  const compiled = compileFilter(filter, eventTypes, '/filter', version);
  return compiled
    ? {
        filter: JSON.stringify(filter),
        filter_path: compiled.path,
        filter_vars: JSON.stringify(compiled.vars),
      }
    : { filter: null, filter_path: null, filter_vars: null };
}

export function storedFilter(row: Pick<WebhookEndpointsTable, 'filter'>): Record<string, unknown> | null {
  const value = typeof row.filter === 'string' ? JSON.parse(row.filter) : row.filter;
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : null;
}

/**
 * The types must be in the endpoint's version (decision 0081): a type 2026-12-01 added is refused
 * to an endpoint of 2026-11-01 (422 webhook_endpoint.event_type_not_in_version, at its index).
 */
export function checkTypesInVersion(types: readonly string[], version: ApiVersion): void {
  const errors = typesNotInVersion(types, version, '');
  if (errors.length > 0) throw notInVersion(errors);
}

/** The types a version lacks, each at its index under `at` (`/manifest/subscriptions/0`). */
export function typesNotInVersion(types: readonly string[], version: ApiVersion, at: string): FieldError[] {
  return types.flatMap((type, index) =>
    inVersion(eventDefinition(type), version)
      ? []
      : [{ path: `${at}/event_types/${index}`, message: `${type} is not in api_version ${version}` }],
  );
}

/** 422 webhook_endpoint.event_type_not_in_version: for an endpoint, and for an app's subscription. */
export function notInVersion(errors: FieldError[]): AppError {
  return new AppError('webhook_endpoint.event_type_not_in_version', errors.map((e) => e.message).join('; '), {
    errors,
  });
}

export function eventTypesOf(row: Pick<WebhookEndpointsTable, 'event_types'>): string[] {
  const value = typeof row.event_types === 'string' ? JSON.parse(row.event_types) : row.event_types;
  return Array.isArray(value) ? value.map(String) : [];
}

export function presentEndpoint(
  ctx: Pick<AppContext, 'secrets'>,
  row: WebhookEndpointsTable,
  grant: EndpointGrantState = NOT_HELD,
): WebhookEndpoint {
  const apiVersion = isApiVersion(row.api_version) ? row.api_version : '2026-11-01';
  return {
    id: row.id,
    url: row.url,
    destination: presentDestination(ctx, row),
    description: row.description,
    event_types: eventTypesOf(row),
    api_version: apiVersion,
    api_version_sunset_at: sunsetOf(apiVersion)?.toISOString() ?? null,
    livemode: row.livemode,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    installation_id: row.installation_id,
    held_reason: grant.held_reason,
    withheld_event_types: grant.withheld_event_types,
    customer_account_id: row.customer_account_id,
    kind: row.kind === 'listener' ? 'cli' : 'endpoint',
    rate_limit: row.rate_limit,
    ordering: row.ordering,
    filter: storedFilter(row),
    headers: presentHeaders(openHeaders(ctx.secrets, row)),
    paused_until: row.paused_until ? row.paused_until.toISOString() : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Endpoints as presented, with how each installation's endpoint stands under its grant. */
export async function presentEndpoints(
  ctx: AppContext,
  rows: readonly WebhookEndpointsTable[],
): Promise<WebhookEndpoint[]> {
  const states = await endpointGrantStates(
    ctx.db,
    rows.filter((row) => row.installation_id !== null).map((row) => row.id),
  );
  return rows.map((row) => presentEndpoint(ctx, row, states.get(row.id)));
}

export async function presentOne(ctx: AppContext, row: WebhookEndpointsTable): Promise<WebhookEndpoint> {
  const [presented] = await presentEndpoints(ctx, [row]);
  return presented as WebhookEndpoint;
}

/** Company, mode and merchant as canSee; an app token also only its own installation's endpoints. */
export function endpointVisible(access: TenantAccess, row: WebhookEndpointsTable): boolean {
  if (row.kind === 'subscription' || !canSee(access, row)) return false;
  return access.installationId === null || row.installation_id === access.installationId;
}

/** The endpoint if the caller may see it; foreign and unknown ids both answer 404. */
export async function findVisibleEndpoint(
  db: Db | Trx,
  access: TenantAccess,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<WebhookEndpointsTable> {
  // By its company too: one shard on Citus (a row of another company is not visible anyway).
  let query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('tenant_id', '=', access.tenantId);
  if (options.forUpdate) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row || !endpointVisible(access, row)) throw new AppError('webhook_endpoint.not_found');
  return row;
}

/** At least one type, each from the catalogue, none twice. */
export function checkEventTypes(types: readonly string[]): string[] {
  if (types.length === 0) {
    throw validationError([{ path: '/event_types', message: 'choose at least one event type' }]);
  }
  const unknown = types.find((type) => !isEventType(type) && !eventDefinition(type));
  if (unknown !== undefined) {
    const detail = `${unknown} is not an event type`;
    throw new AppError('webhook_endpoint.invalid_event_type', detail, {
      errors: [{ path: '/event_types', message: detail }],
    });
  }
  // App events and privacy messages are in the catalogue too (audience `apps`), but go to an app's
  // events URL: every one of them is named, so a client that took the whole catalogue sees its fix.
  const forApps = types.flatMap((type, index) => (isEventType(type) ? [] : [{ type, index }]));
  if (forApps.length > 0) {
    throw new AppError(
      'webhook_endpoint.event_type_for_apps',
      `${forApps.map((t) => t.type).join(', ')} ${forApps.length === 1 ? 'is' : 'are'} sent to apps at their events URL (audience "apps"); subscribe to the types of GET /v1/webhook-event-types?audience=endpoints`,
      {
        errors: forApps.map(({ type, index }) => ({
          path: `/event_types/${index}`,
          message: `${type} has audience "apps": endpoints cannot subscribe to it`,
        })),
      },
    );
  }
  if (new Set(types).size !== types.length) {
    throw validationError([{ path: '/event_types', message: 'lists an event type twice' }]);
  }
  return [...types];
}

export function cleanDescription(description: string | null | undefined): string | null {
  const text = description?.trim() ?? '';
  return text === '' ? null : text;
}

export async function listEndpoints(
  ctx: AppContext,
  access: TenantAccess,
  page: PageRequest & { api_version?: ApiVersion },
): Promise<Page<WebhookEndpoint>> {
  requireScope(access, 'webhooks:read');
  let query = ctx.db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode)
    // An app subscription's targets are the app's, not the company's to manage (issue 32).
    .where('kind', '<>', 'subscription');
  if (access.customerAccountId) query = query.where('customer_account_id', '=', access.customerAccountId);
  if (access.installationId) query = query.where('installation_id', '=', access.installationId);
  // The endpoints still on a version, e.g. the deprecated one (decision 0081).
  if (page.api_version) query = query.where('api_version', '=', page.api_version);
  const rows = await newestFirst(query, 'webhook_endpoints', page, (row) => row);
  return { next_cursor: rows.next_cursor, data: await presentEndpoints(ctx, rows.data) };
}

export async function getEndpoint(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<WebhookEndpoint> {
  requireScope(access, 'webhooks:read');
  return presentOne(ctx, await findVisibleEndpoint(ctx.db, access, id));
}

export async function deleteEndpoint(ctx: AppContext, access: TenantAccess, id: string): Promise<void> {
  requireScope(access, 'webhooks:write');
  await findVisibleEndpoint(ctx.db, access, id);
  // Its deliveries and attempts go with it (ON DELETE CASCADE).
  await ctx.db.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
}

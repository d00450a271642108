import type { AppContext, Trx } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { newestFirst } from '../../db/paging.ts';
import { assertUrlAllowed } from '../../delivery/guard.ts';
import { disableEndpoint, enableEndpoint } from '../../delivery/lifecycle.ts';
import { applyOrdering } from '../../delivery/ordering.ts';
import { metricKind } from '../../delivery/record.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import { addMs, DAY } from '../../lib/clock.ts';
import { newSigningSecret } from '../../lib/crypto.ts';
import { AppError, validationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { canSee, requireScope, type TenantAccess } from '../accounts/access.ts';
import {
  type EndpointGrantState,
  endpointGrantStates,
  type HeldReason,
  NOT_HELD,
} from '../oauth/installation-grants.ts';
import {
  checkCustomHeaders,
  checkOrdering,
  checkRateLimit,
  headersRequired,
  type Ordering,
  openHeaders,
  presentHeaders,
  sealHeaders,
} from './controls.ts';
import { eventDefinition, isEventType } from './event-types.ts';
import { compileFilter } from './filter.ts';

/** Spec section 8: up to 5 per company or merchant, up to 5 per app installation (each mode apart). */
export const ENDPOINT_LIMIT = 5;
/** Spec section 8: after a rotation the previous secret signs too for 24 h. */
export const ROTATION_OVERLAP_MS = DAY;

export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string | null;
  event_types: string[];
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
  url: string;
  event_types: string[];
  description?: string | null;
  filter?: object | null;
}

export interface UpdateEndpointInput extends DeliveryControlsInput {
  url?: string;
  event_types?: string[];
  description?: string | null;
  enabled?: boolean;
  /** null removes the filter. */
  filter?: object | null;
}

/** The filter's columns, checked and compiled against the endpoint's types (filter.ts); none for null. */
function filterColumns(filter: unknown, eventTypes: readonly string[]) {
  const compiled = compileFilter(filter, eventTypes, '/filter');
  return compiled
    ? {
        filter: JSON.stringify(filter),
        filter_path: compiled.path,
        filter_vars: JSON.stringify(compiled.vars),
      }
    : { filter: null, filter_path: null, filter_vars: null };
}

function storedFilter(row: Pick<WebhookEndpointsTable, 'filter'>): Record<string, unknown> | null {
  const value = typeof row.filter === 'string' ? JSON.parse(row.filter) : row.filter;
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : null;
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
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: eventTypesOf(row),
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

async function presentOne(ctx: AppContext, row: WebhookEndpointsTable): Promise<WebhookEndpoint> {
  const [presented] = await presentEndpoints(ctx, [row]);
  return presented as WebhookEndpoint;
}

/** Company, mode and merchant as canSee; an app token also only its own installation's endpoints. */
export function endpointVisible(access: TenantAccess, row: WebhookEndpointsTable): boolean {
  if (!canSee(access, row)) return false;
  return access.installationId === null || row.installation_id === access.installationId;
}

/** The endpoint if the caller may see it; foreign and unknown ids both answer 404. */
export async function findVisibleEndpoint(
  db: Db | Trx,
  access: TenantAccess,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<WebhookEndpointsTable> {
  let query = db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id);
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

function cleanDescription(description: string | null | undefined): string | null {
  const text = description?.trim() ?? '';
  return text === '' ? null : text;
}

/**
 * Counts the endpoints of the caller's owner (installation, merchant or company) and mode under a
 * lock on the company row, so concurrent creations cannot pass the limit together.
 */
async function assertBelowLimit(trx: Trx, access: TenantAccess): Promise<void> {
  await trx.selectFrom('companies').select('id').where('id', '=', access.tenantId).forUpdate().execute();
  let query = trx
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode)
    // Listeners come and go with their command; they have a limit of their own.
    .where('kind', '<>', 'listener');
  if (access.installationId) query = query.where('installation_id', '=', access.installationId);
  else {
    query = query.where('installation_id', 'is', null);
    query = access.customerAccountId
      ? query.where('customer_account_id', '=', access.customerAccountId)
      : query.where('customer_account_id', 'is', null);
  }
  const { count } = await query.executeTakeFirstOrThrow();
  if (Number(count) >= ENDPOINT_LIMIT) {
    throw new AppError(
      'webhook_endpoint.limit_reached',
      `At most ${ENDPOINT_LIMIT} ${access.livemode ? 'live' : 'test'} endpoints here; delete one first`,
      { limit: ENDPOINT_LIMIT },
    );
  }
}

/** A new endpoint row of the caller's company, mode and scope, with a new signing secret. */
export function newEndpointRow(
  ctx: AppContext,
  access: TenantAccess,
  fields: {
    kind: 'endpoint' | 'listener';
    url: string;
    description: string | null;
    eventTypes: string[];
    controls?: DeliveryControlsInput;
  },
): { row: WebhookEndpointsTable; secret: string } {
  const secret = newSigningSecret();
  const now = ctx.clock.now();
  const row: WebhookEndpointsTable = {
    id: newId('we'),
    tenant_id: access.tenantId,
    customer_account_id: access.customerAccountId,
    installation_id: access.installationId,
    livemode: access.livemode,
    url: fields.url,
    description: fields.description,
    event_types: JSON.stringify(fields.eventTypes),
    enabled: true,
    disabled_reason: null,
    secret_sealed: ctx.secrets.seal(secret),
    previous_secret_sealed: null,
    previous_secret_expires_at: null,
    failing_since: null,
    failing_noticed_at: null,
    kind: fields.kind,
    listener_seen_at: fields.kind === 'listener' ? now : null,
    app_id: null,
    held: false,
    rate_limit: checkRateLimit(fields.controls?.rate_limit ?? null),
    ordering: checkOrdering(fields.controls?.ordering ?? 'none'),
    headers_sealed: sealHeaders(ctx.secrets, checkCustomHeaders(fields.controls?.headers ?? null, null)),
    paused_until: null,
    created_by: access.userId,
    created_at: now,
    updated_at: now,
  };
  return { row, secret };
}

/** Creates an endpoint in the caller's mode and scope; the only answer that carries the secret unasked. */
export async function createEndpoint(
  ctx: AppContext,
  access: TenantAccess,
  input: CreateEndpointInput,
): Promise<WebhookEndpoint & { secret: string }> {
  requireScope(access, 'webhooks:write');
  const eventTypes = checkEventTypes(input.event_types);
  const filter = filterColumns(input.filter, eventTypes);
  const url = input.url.trim();
  await assertUrlAllowed(ctx, url);
  const created = newEndpointRow(ctx, access, {
    kind: 'endpoint',
    url,
    description: cleanDescription(input.description),
    eventTypes,
    controls: input,
  });
  const row: WebhookEndpointsTable = { ...created.row, ...filter };
  const { secret } = created;
  await ctx.db.transaction().execute(async (trx) => {
    await assertBelowLimit(trx, access);
    await trx.insertInto('webhook_endpoints').values(row).execute();
  });
  return { ...(await presentOne(ctx, row)), secret };
}

export async function listEndpoints(
  ctx: AppContext,
  access: TenantAccess,
  page: PageRequest,
): Promise<Page<WebhookEndpoint>> {
  requireScope(access, 'webhooks:read');
  let query = ctx.db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode);
  if (access.customerAccountId) query = query.where('customer_account_id', '=', access.customerAccountId);
  if (access.installationId) query = query.where('installation_id', '=', access.installationId);
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
  await findVisibleEndpoint(ctx.db, access, id);
  const eventTypes = input.event_types === undefined ? undefined : checkEventTypes(input.event_types);
  const url = input.url?.trim();
  if (url !== undefined) await assertUrlAllowed(ctx, url);
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
    // The filter is checked against the types the endpoint will have: new types keep the old
    // filter only if its paths are in their schemas too.
    const filter =
      input.filter !== undefined || eventTypes !== undefined
        ? filterColumns(
            input.filter !== undefined ? input.filter : storedFilter(current),
            eventTypes ?? eventTypesOf(current),
          )
        : undefined;
    if (input.enabled === false && current.enabled) cancelled = await disableEndpoint(trx, id, 'manual', now);
    if (input.enabled === true && !current.enabled) await enableEndpoint(trx, id, now);
    if (ordering !== undefined && ordering !== current.ordering) await applyOrdering(trx, id, ordering);
    return trx
      .updateTable('webhook_endpoints')
      .set({
        ...(url !== undefined ? { url } : {}),
        ...(eventTypes !== undefined ? { event_types: JSON.stringify(eventTypes) } : {}),
        ...(input.description !== undefined ? { description: cleanDescription(input.description) } : {}),
        ...(rateLimit !== undefined ? { rate_limit: rateLimit } : {}),
        ...(ordering !== undefined ? { ordering } : {}),
        ...(headers !== undefined ? { headers_sealed: sealHeaders(ctx.secrets, headers) } : {}),
        ...(filter ?? {}),
        updated_at: now,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  if (cancelled !== null) ctx.metrics.deliveryOutcome(metricKind(row.kind), 'cancelled', cancelled);
  return presentOne(ctx, row);
}

export async function deleteEndpoint(ctx: AppContext, access: TenantAccess, id: string): Promise<void> {
  requireScope(access, 'webhooks:write');
  await findVisibleEndpoint(ctx.db, access, id);
  // Its deliveries and attempts go with it (ON DELETE CASCADE).
  await ctx.db.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
}

/**
 * The dashboard's reveal. A signing secret lets its holder forge messages to the receiver, so
 * revealing it needs webhooks:write, like changing it.
 */
export async function revealSecret(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<{ secret: string }> {
  requireScope(access, 'webhooks:write');
  const row = await findVisibleEndpoint(ctx.db, access, id);
  return { secret: ctx.secrets.open(row.secret_sealed) };
}

/** A new secret; the one it replaces keeps signing for 24 h so receivers can switch without a gap. */
export async function rotateSecret(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<{ secret: string }> {
  requireScope(access, 'webhooks:write');
  const secret = newSigningSecret();
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const current = await findVisibleEndpoint(trx, access, id, { forUpdate: true });
    await trx
      .updateTable('webhook_endpoints')
      .set({
        secret_sealed: ctx.secrets.seal(secret),
        previous_secret_sealed: current.secret_sealed,
        previous_secret_expires_at: addMs(now, ROTATION_OVERLAP_MS),
        updated_at: now,
      })
      .where('id', '=', id)
      .execute();
  });
  return { secret };
}

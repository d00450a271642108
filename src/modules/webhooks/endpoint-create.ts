import type { AppContext, Trx } from '../../context.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { type ApiVersion, LATEST_API_VERSION } from '../shipments/events.ts';
import { checkCustomHeaders, checkOrdering, checkRateLimit, sealHeaders } from './controls.ts';
import { destinationColumns } from './endpoint-destination.ts';
import { newSealedSecret } from './endpoint-secrets.ts';
import {
  type CreateEndpointInput,
  checkEventTypes,
  checkTypesInVersion,
  cleanDescription,
  type DeliveryControlsInput,
  filterColumns,
  presentOne,
  type WebhookEndpoint,
} from './endpoints.ts';

/** Spec section 8: up to 5 per company or merchant, up to 5 per app installation (each mode apart). */
export const ENDPOINT_LIMIT = 5;

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
    .where('kind', '=', 'endpoint');
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
    /** The latest unless given. */
    apiVersion?: ApiVersion;
  },
): { row: WebhookEndpointsTable; secret: string } {
  const { secret, secret_sealed } = newSealedSecret(ctx);
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
    api_version: fields.apiVersion ?? LATEST_API_VERSION,
    enabled: true,
    disabled_reason: null,
    secret_sealed,
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
  const apiVersion = input.api_version ?? LATEST_API_VERSION;
  checkTypesInVersion(eventTypes, apiVersion);
  const filter = filterColumns(input.filter, eventTypes, apiVersion);
  const { url, destination_sealed } = await destinationColumns(ctx, input);
  const created = newEndpointRow(ctx, access, {
    kind: 'endpoint',
    url,
    description: cleanDescription(input.description),
    eventTypes,
    controls: input,
    apiVersion,
  });
  const row: WebhookEndpointsTable = { ...created.row, ...filter, destination_sealed };
  const { secret } = created;
  await ctx.db.transaction().execute(async (trx) => {
    await assertBelowLimit(trx, access);
    await trx.insertInto('webhook_endpoints').values(row).execute();
  });
  return { ...(await presentOne(ctx, row)), secret };
}

import { type AppContext, runAfterCommit } from '../../context.ts';
import { AppError, type FieldError, validationError } from '../../lib/errors.ts';
import type { Principal } from '../accounts/access.ts';
import { sendScopesUpdated } from '../app-events/scopes-updated.ts';
import { cancelWithheldDeliveries } from '../oauth/installation-grants.ts';
import { EVENT_TYPES } from '../webhooks/event-types.ts';
import { jsonArray } from './registry.ts';
import { type EffectiveSubscription, subscriptionsOfInstallation } from './subscription-deliveries.ts';

/** The installation an app's access token acts for, as the app reads it (CONTRACT.md "Apps as code"). */
export interface OwnInstallation {
  id: string;
  app_id: string;
  tenant_id: string;
  customer_account_id: string | null;
  /** The granted scopes in force (those the approver's role still holds). */
  scopes: string[];
  held_reason: string | null;
  muted_event_types: string[];
  subscriptions: EffectiveSubscription[];
}

/** The token's installation, with its tenant: every read of it is one shard on Citus (decision 0071). */
function appTokenOf(principal: Principal | null): {
  appId: string;
  installationId: string;
  tenantId: string;
} {
  if (principal?.kind !== 'app_token' || !principal.access.installationId) {
    throw new AppError('auth.insufficient_scope', 'This call needs an app access token');
  }
  return {
    appId: principal.appId,
    installationId: principal.access.installationId,
    tenantId: principal.access.tenantId,
  };
}

/** GET /v1/installation. */
export async function ownInstallation(
  ctx: AppContext,
  principal: Principal | null,
): Promise<OwnInstallation> {
  const { appId, installationId, tenantId } = appTokenOf(principal);
  const row = await ctx.db
    .selectFrom('installations')
    .select(['id', 'app_id', 'tenant_id', 'customer_account_id'])
    .where('id', '=', installationId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw new AppError('installation.not_found');
  const state = await subscriptionsOfInstallation(ctx, appId, installationId);
  return {
    ...row,
    scopes: state.scopes,
    held_reason: state.held_reason,
    muted_event_types: state.muted,
    subscriptions: state.data,
  };
}

/**
 * PATCH /v1/installation `{muted_event_types}`: the app narrows what its subscriptions send to this
 * installation; the fan-out reads it at the next event. Types of the catalogue, each once.
 */
export async function muteEventTypes(
  ctx: AppContext,
  principal: Principal | null,
  input: { muted_event_types: string[] },
): Promise<OwnInstallation> {
  const { installationId, tenantId } = appTokenOf(principal);
  const errors: FieldError[] = [];
  input.muted_event_types.forEach((type, index) => {
    if (!(EVENT_TYPES as readonly string[]).includes(type)) {
      errors.push({
        path: `/muted_event_types/${index}`,
        message: `is not an event type: one of ${EVENT_TYPES.join(', ')}`,
      });
    }
  });
  if (errors.length > 0) throw validationError(errors, 'Unknown event types', 422);
  await ctx.db
    .updateTable('installations')
    .set({
      muted_event_types: JSON.stringify([...new Set(input.muted_event_types)]),
      updated_at: ctx.clock.now(),
    })
    .where('id', '=', installationId)
    .where('tenant_id', '=', tenantId)
    .execute();
  return ownInstallation(ctx, principal);
}

/**
 * DELETE /v1/installation/scopes/{scope}: the app gives a scope back (CONTRACT.md, optional
 * scopes). The grant narrows at once: tokens, subscriptions and endpoints follow it, what waits for
 * the installation's endpoints that it no longer allows is cancelled, and `app.scopes_updated` is
 * sent. The last scope stays: an app that wants none is uninstalled by the company.
 */
export async function giveBackScope(
  ctx: AppContext,
  principal: Principal | null,
  scope: string,
): Promise<OwnInstallation> {
  const { appId, installationId, tenantId } = appTokenOf(principal);
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('installations')
      .select(['tenant_id', 'customer_account_id', 'scopes'])
      .where('id', '=', installationId)
      .where('tenant_id', '=', tenantId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) throw new AppError('installation.not_found');
    const before = jsonArray<string>(row.scopes);
    if (!before.includes(scope)) throw new AppError('installation.scope_not_held');
    const after = before.filter((held) => held !== scope);
    if (after.length === 0) throw new AppError('installation.last_scope');
    await trx
      .updateTable('installations')
      .set({ scopes: JSON.stringify(after), updated_at: now })
      .where('id', '=', installationId)
      .where('tenant_id', '=', tenantId)
      .execute();
    await cancelWithheldDeliveries(trx, row.tenant_id, now);
    await sendScopesUpdated(ctx, trx, {
      appId,
      installationId,
      tenantId: row.tenant_id,
      customerAccountId: row.customer_account_id,
      before,
      after,
    });
  });
  runAfterCommit(ctx);
  return ownInstallation(ctx, principal);
}

import type { AppContext } from '../../context.ts';
import { AppError, type FieldError, validationError } from '../../lib/errors.ts';
import type { Principal } from '../accounts/access.ts';
import { EVENT_TYPES } from '../webhooks/event-types.ts';
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

function appTokenOf(principal: Principal | null): { appId: string; installationId: string } {
  if (principal?.kind !== 'app_token' || !principal.access.installationId) {
    throw new AppError('auth.insufficient_scope', 'This call needs an app access token');
  }
  return { appId: principal.appId, installationId: principal.access.installationId };
}

/** GET /v1/installation. */
export async function ownInstallation(
  ctx: AppContext,
  principal: Principal | null,
): Promise<OwnInstallation> {
  const { appId, installationId } = appTokenOf(principal);
  const row = await ctx.db
    .selectFrom('installations')
    .select(['id', 'app_id', 'tenant_id', 'customer_account_id'])
    .where('id', '=', installationId)
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
  const { installationId } = appTokenOf(principal);
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
    .execute();
  return ownInstallation(ctx, principal);
}

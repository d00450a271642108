import type { AppContext } from '../../context.ts';
import { addMs, DAY } from '../../lib/clock.ts';
import { newSigningSecret } from '../../lib/crypto.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { findVisibleEndpoint } from './endpoints.ts';

/** Spec section 8: after a rotation the previous secret signs too for 24 h. */
export const ROTATION_OVERLAP_MS = DAY;

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

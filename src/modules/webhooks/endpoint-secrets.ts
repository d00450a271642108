import type { AppContext } from '../../context.ts';
import { addMs, DAY } from '../../lib/clock.ts';
import { newSigningSecret } from '../../lib/crypto.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import { findVisibleEndpoint } from './endpoints.ts';

/** Spec section 8: after a rotation the previous secret signs too for 24 h. */
export const ROTATION_OVERLAP_MS = DAY;

/**
 * A new signing secret and its sealed form (AES-GCM, lib/crypto.ts SecretBox), as a row keeps it.
 * Webhook endpoints and inbound sources (src/modules/inbound) share it, with the rotation below.
 */
export function newSealedSecret(ctx: Pick<AppContext, 'secrets'>): { secret: string; secret_sealed: string } {
  const secret = newSigningSecret();
  return { secret, secret_sealed: ctx.secrets.seal(secret) };
}

/**
 * The columns of a rotation: a new sealed secret, the current one kept as the previous until 24 h
 * from `now`, so that senders and receivers switch without a gap.
 */
export function rotatedSecretColumns(
  ctx: Pick<AppContext, 'secrets'>,
  currentSealed: string,
  now: Date,
): {
  secret: string;
  columns: { secret_sealed: string; previous_secret_sealed: string; previous_secret_expires_at: Date };
} {
  const { secret, secret_sealed } = newSealedSecret(ctx);
  return {
    secret,
    columns: {
      secret_sealed,
      previous_secret_sealed: currentSealed,
      previous_secret_expires_at: addMs(now, ROTATION_OVERLAP_MS),
    },
  };
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
  const now = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    const current = await findVisibleEndpoint(trx, access, id, { forUpdate: true });
    const { secret, columns } = rotatedSecretColumns(ctx, current.secret_sealed, now);
    await trx
      .updateTable('webhook_endpoints')
      .set({ ...columns, updated_at: now })
      .where('id', '=', id)
      .execute();
    return { secret };
  });
}

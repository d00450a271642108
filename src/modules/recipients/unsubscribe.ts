import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { TOKEN_PATTERN } from './tokens.ts';

/** The company an unsubscribe link belongs to, or null for an unknown one. */
export async function unsubscribeTarget(
  db: Db,
  token: string,
): Promise<{ tenantId: string; addressHash: string } | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const row = await db
    .selectFrom('recipient_notifications')
    .select(['tenant_id', 'address_hash'])
    .where('unsubscribe_token', '=', token)
    .executeTakeFirst();
  return row ? { tenantId: row.tenant_id, addressHash: row.address_hash } : null;
}

/**
 * RFC 8058's one-click unsubscribe: the address gets no more e-mail from this company, and what
 * is still queued for it is suppressed. Doing it again changes nothing.
 */
export async function unsubscribe(ctx: AppContext, target: { tenantId: string; addressHash: string }) {
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('recipient_unsubscribes')
      .values({ tenant_id: target.tenantId, address_hash: target.addressHash, created_at: now })
      .onConflict((oc) => oc.columns(['tenant_id', 'address_hash']).doNothing())
      .execute();
    await trx
      .updateTable('recipient_notifications')
      .set({ status: 'suppressed', reason: 'unsubscribed', to_address: null, locked_until: null })
      .where('tenant_id', '=', target.tenantId)
      .where('address_hash', '=', target.addressHash)
      .where('status', '=', 'queued')
      .execute();
  });
}

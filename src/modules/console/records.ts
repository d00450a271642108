import type { Trx } from '../../context.ts';

/**
 * The lasting record of an installation, written in the approval's transaction: created with the
 * installation, its scopes following each approval. An installation removed and installed again
 * is a new installation with a record of its own.
 */
export async function recordInstallation(
  trx: Trx,
  installation: {
    id: string;
    appId: string;
    tenantId: string;
    customerAccountId: string | null;
    scopes: string;
  },
  now: Date,
): Promise<void> {
  await trx
    .insertInto('installation_records')
    .values({
      id: installation.id,
      app_id: installation.appId,
      tenant_id: installation.tenantId,
      customer_account_id: installation.customerAccountId,
      scopes: installation.scopes,
      installed_at: now,
    })
    .onConflict((oc) => oc.columns(['id', 'tenant_id']).doUpdateSet({ scopes: installation.scopes }))
    .execute();
}

/** Written in the uninstall's transaction: the record stays, with when and (if given) why. */
export async function recordUninstall(
  trx: Trx,
  installation: { id: string; tenant_id: string },
  at: Date,
  reason: string | null,
): Promise<void> {
  await trx
    .updateTable('installation_records')
    .set({ uninstalled_at: at, uninstall_reason: reason })
    .where('id', '=', installation.id)
    .where('tenant_id', '=', installation.tenant_id)
    .execute();
}

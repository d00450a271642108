import type { AppContext, Trx } from '../../context.ts';
import { enqueueAppEvents } from './enqueue.ts';

export interface ScopeChange {
  appId: string;
  installationId: string;
  tenantId: string;
  customerAccountId: string | null;
  before: readonly string[];
  after: readonly string[];
}

/**
 * app.scopes_updated (CONTRACT.md, optional scopes): written in the transaction that changes the
 * grant, so the app hears of every change once and never of one that did not happen. Nothing is
 * sent when the scopes are the same.
 */
export async function sendScopesUpdated(ctx: AppContext, trx: Trx, change: ScopeChange): Promise<void> {
  const granted = change.after.filter((scope) => !change.before.includes(scope));
  const revoked = change.before.filter((scope) => !change.after.includes(scope));
  if (granted.length === 0 && revoked.length === 0) return;
  await enqueueAppEvents(ctx, trx, [
    {
      appId: change.appId,
      type: 'app.scopes_updated',
      tenantId: change.tenantId,
      data: {
        installation_id: change.installationId,
        customer_account_id: change.customerAccountId,
        granted,
        revoked,
        scopes: [...change.after],
      },
    },
  ]);
}

import type { AppContext } from '../../context.ts';
import { uninstallListeners } from '../apps/registry.ts';
import { enqueueAppEvents } from './enqueue.ts';

/**
 * app.uninstalled (spec 6): written in the uninstall transaction, after the installation row (and
 * with it, by cascade, its tokens and webhook endpoints) is gone, so the message is only ever sent
 * about an installation that no longer exists.
 */
export function registerUninstalledEvent(_ctx: AppContext): void {
  if (uninstallListeners.some((listener) => listener.name === 'sendAppUninstalled')) return;
  uninstallListeners.push(async function sendAppUninstalled(ctx, trx, removed) {
    await enqueueAppEvents(ctx, trx, [
      {
        appId: removed.app_id,
        type: 'app.uninstalled',
        tenantId: removed.tenant_id,
        data: {
          installation_id: removed.id,
          customer_account_id: removed.customer_account_id,
          uninstalled_at: removed.uninstalled_at.toISOString(),
        },
      },
    ]);
  });
}

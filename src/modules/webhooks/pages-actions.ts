import type { AppContext } from '../../context.ts';
import type { TenantAccess } from '../accounts/access.ts';
import { updateEndpoint } from './endpoint-update.ts';
import { deleteEndpoint } from './endpoints.ts';
import { enableAndReplay } from './replay.ts';

type EndpointAction = (
  ctx: AppContext,
  access: TenantAccess,
  id: string,
) => Promise<{ message: string; to?: string }>;

/**
 * The dashboard's state changes on one endpoint, by the last segment of their form's path. Each
 * answers the one-time message of the page it redirects to (kept server-side, never in the URL).
 */
export const ENDPOINT_ACTIONS: Record<string, EndpointAction> = {
  disable: async (ctx, access, id) => {
    await updateEndpoint(ctx, access, id, { enabled: false });
    return { message: 'Endpoint disabled; what was waiting is cancelled.' };
  },
  // One action after a disable (spec 3.3): enable, then queue the failed and cancelled of 7 days.
  'enable-and-replay': async (ctx, access, id) => {
    const { replayed } = await enableAndReplay(ctx, access, id);
    return { message: `Endpoint enabled; ${replayed} deliveries queued again.` };
  },
  delete: async (ctx, access, id) => {
    await deleteEndpoint(ctx, access, id);
    return { message: 'Endpoint deleted.', to: '/dashboard/webhooks' };
  },
};

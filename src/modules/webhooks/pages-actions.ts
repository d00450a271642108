import type { AppContext } from '../../context.ts';
import type { TenantAccess } from '../accounts/access.ts';
import { updateEndpoint } from './endpoint-update.ts';
import { deleteEndpoint } from './endpoints.ts';
import { enableAndReplay } from './replay.ts';

type EndpointAction = (
  ctx: AppContext,
  access: TenantAccess,
  id: string,
) => Promise<{ done: string; to?: string }>;

/**
 * The dashboard's state changes on one endpoint, by the last segment of their form's path. Each
 * answers a key for the page it redirects to (never free text in the address, which anyone could
 * craft into a link).
 */
export const ENDPOINT_ACTIONS: Record<string, EndpointAction> = {
  disable: async (ctx, access, id) => {
    await updateEndpoint(ctx, access, id, { enabled: false });
    return { done: 'disabled' };
  },
  // One action after a disable (spec 3.3): enable, then queue the failed and cancelled of 7 days.
  'enable-and-replay': async (ctx, access, id) => {
    const { replayed } = await enableAndReplay(ctx, access, id);
    return { done: `enabled-${replayed}` };
  },
  delete: async (ctx, access, id) => {
    await deleteEndpoint(ctx, access, id);
    return { done: 'deleted', to: '/dashboard/webhooks' };
  },
};

/** The flash for a `done` key, or null for anything else. */
export function doneFlash(done: string | undefined): { kind: 'ok'; message: string } | null {
  if (done === 'disabled') return { kind: 'ok', message: 'Endpoint disabled; what was waiting is cancelled' };
  if (done === 'deleted') return { kind: 'ok', message: 'Endpoint deleted' };
  if (done === 'controls') return { kind: 'ok', message: 'Delivery controls saved' };
  const replayed = /^enabled-(\d{1,6})$/.exec(done ?? '')?.[1];
  if (replayed !== undefined) {
    return { kind: 'ok', message: `Endpoint enabled; ${replayed} deliveries queued again` };
  }
  return null;
}

import type { AppContext } from '../../context.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import type { TenantAccess } from '../accounts/access.ts';
import { ownerAccount, spendOutbound } from '../outbound/budget.ts';

/**
 * A test send or replay to an endpoint spends one request from its company's outbound budget
 * (whether a merchant's or an installation's key asks) and from its destination addresses'
 * (decisions 0028, 0032). A listener's messages go over the command's own connection, not to its
 * URL's host (localhost): they spend from the company's budget only.
 */
export function spendEndpointSend(
  ctx: AppContext,
  access: TenantAccess,
  endpoint: Pick<WebhookEndpointsTable, 'kind' | 'url'>,
): Promise<void> {
  return spendOutbound(ctx, {
    account: ownerAccount(access),
    url: endpoint.kind === 'listener' ? null : endpoint.url,
  });
}

import type { AppContext } from '../../context.ts';
import { assertBrokerAllowed } from '../../delivery/destinations/guard.ts';
import {
  checkDestination,
  type Destination,
  type DestinationInput,
  invalidDestination,
  isBroker,
  keptPassword,
  maskedBrokerUrl,
  maskedDestination,
  openDestination,
  sealDestination,
} from '../../delivery/destinations/spec.ts';
import { assertUrlAllowed } from '../../delivery/guard.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import { validationError } from '../../lib/errors.ts';

/** The destination as answers show it: a broker's password masked, never the sealed text. */
export function presentDestination(
  ctx: Pick<AppContext, 'secrets'>,
  row: Pick<WebhookEndpointsTable, 'url' | 'destination_sealed'>,
): Destination {
  if (!row.destination_sealed) return { type: 'https', url: row.url };
  return maskedDestination(openDestination(ctx.secrets, row.destination_sealed));
}

/** The columns a destination is stored in: `url` (a broker's masked) and the sealed broker destination. */
export interface DestinationColumns {
  url: string;
  destination_sealed: string | null;
}

/**
 * Checks a destination (its shape, then the guard on its address) and answers its columns. A
 * broker URL that comes back with the masked password (`****`) keeps the stored one, only while it
 * names the same kind, host and port: a password is never sent to a host it was not given for.
 */
export async function destinationColumns(
  ctx: AppContext,
  input: { url?: string | undefined; destination?: DestinationInput | undefined },
  current?: Pick<WebhookEndpointsTable, 'destination_sealed'>,
): Promise<DestinationColumns> {
  if (input.destination === undefined) {
    if (input.url === undefined)
      throw validationError([{ path: '/url', message: 'a URL or a destination is required' }]);
    const url = input.url.trim();
    await assertUrlAllowed(ctx, url);
    return { url, destination_sealed: null };
  }
  if (input.url !== undefined)
    throw invalidDestination([{ path: '/url', message: 'give the URL inside destination, not beside it' }]);
  let destination = checkDestination(input.destination);
  if (!isBroker(destination)) {
    await assertUrlAllowed(ctx, destination.url);
    return { url: destination.url, destination_sealed: null };
  }
  destination = keptPassword(ctx.secrets, destination, current?.destination_sealed ?? null);
  await assertBrokerAllowed(ctx, destination);
  return {
    url: maskedBrokerUrl(destination.url),
    destination_sealed: sealDestination(ctx.secrets, destination),
  };
}

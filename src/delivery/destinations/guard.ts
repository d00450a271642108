import { AppError } from '../../lib/errors.ts';
import type { DeliveryContext } from '../context.ts';
import { bareHost, classifyAddress, GuardRefusal, resolveCheckedAddresses } from '../guard.ts';
import { BROKER_SCHEMES, type BrokerDestination, TLS_SCHEMES } from './spec.ts';

/** Where a broker connection goes: the checked address, and the name for TLS. */
export interface BrokerAddress {
  host: string;
  address: string;
  port: number;
}

/**
 * The URL guard for a broker (decision 0072): the host is resolved and every address checked as a
 * webhook URL's is (private, loopback and the rest refused unless WAYBILL_WEBHOOK_ALLOW_PRIVATE
 * names them), on the scheme's own port only for a public address; the connection goes to the
 * address checked here.
 */
export async function checkBrokerAddress(
  ctx: DeliveryContext,
  destination: BrokerDestination,
): Promise<BrokerAddress> {
  const url = new URL(destination.url);
  const standard = BROKER_SCHEMES[destination.type][url.protocol];
  if (standard === undefined)
    throw new GuardRefusal('address', `the URL must use a ${destination.type} scheme`);
  const port = url.port === '' ? standard : Number(url.port);
  const host = bareHost(url.hostname);
  const addresses = await resolveCheckedAddresses(
    ctx,
    host,
    port !== standard,
    `the broker must listen on port ${standard}`,
  );
  // CONTRACT.md, Trust 3: signed envelopes with recipients' data, and the broker's credentials,
  // cross the internet only encrypted; plaintext stays inside the allowlisted private ranges.
  const allow = ctx.config.webhookAllowPrivate;
  if (!TLS_SCHEMES.has(url.protocol) && addresses.some((a) => classifyAddress(a, allow) === 'public')) {
    throw new GuardRefusal(
      'insecure',
      `a broker on a public address needs TLS: use ${destination.type === 'rabbitmq' ? 'amqps://' : 'tls://'}`,
    );
  }
  return { host, address: addresses[0] as string, port };
}

/** Refuses, with 422 webhook_endpoint.url_not_allowed, a broker a message must not be sent to. */
export async function assertBrokerAllowed(
  ctx: DeliveryContext,
  destination: BrokerDestination,
  path = '/destination',
): Promise<void> {
  try {
    await checkBrokerAddress(ctx, destination);
  } catch (error) {
    if (error instanceof GuardRefusal && error.kind === 'insecure') {
      throw new AppError(
        'webhook_endpoint.destination_insecure',
        `The destination is not encrypted: ${error.message}`,
        {
          errors: [{ path: `${path}/url`, message: error.message }],
        },
      );
    }
    if (error instanceof GuardRefusal) {
      throw new AppError('webhook_endpoint.url_not_allowed', `The URL is not allowed: ${error.message}`, {
        errors: [{ path: `${path}/url`, message: error.message }],
      });
    }
    throw error;
  }
}

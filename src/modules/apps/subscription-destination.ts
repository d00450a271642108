import type { AppContext } from '../../context.ts';
import { assertBrokerAllowed } from '../../delivery/destinations/guard.ts';
import {
  checkDestination,
  type Destination,
  type DestinationInput,
  isBroker,
  keptPassword,
  maskedBrokerUrl,
  maskedDestination,
  sealDestination,
} from '../../delivery/destinations/spec.ts';
import { assertUrlAllowed } from '../../delivery/guard.ts';
import { AppError, type FieldError } from '../../lib/errors.ts';
import { eventsUrlProblem } from './urls.ts';

/** A version's subscriptions' broker destinations by index, each sealed; null for an HTTPS one. */
export type SealedDestinations = Array<string | null>;

/** A version's destinations_sealed column, read. */
export function sealedDestinations(column: string | null): SealedDestinations {
  return column ? (JSON.parse(column) as SealedDestinations) : [];
}

/** Where one subscription's messages go, as the manifest keeps it and as its targets carry it. */
export interface SubscriptionDestination {
  /** The HTTPS URL, or the broker URL with its password masked. */
  url: string;
  /** A broker destination, masked: what the manifest shows. */
  destination: Destination | null;
  /** The broker destination sealed whole, for the version and every installation's target. */
  sealed: string | null;
  errors: FieldError[];
}

function fieldErrors(error: unknown): FieldError[] {
  if (!(error instanceof AppError)) throw error;
  return (error.extra.errors as FieldError[] | undefined) ?? [{ path: '', message: error.message }];
}

async function httpsUrl(ctx: AppContext, url: string, path: string): Promise<FieldError[]> {
  const problem = eventsUrlProblem(url, ctx.config.webhookAllowPrivate);
  if (problem) return [{ path, message: problem.message }];
  try {
    await assertUrlAllowed(ctx, url, { allowUnresolved: true });
    return [];
  } catch (error) {
    return fieldErrors(error).map((e) => ({ ...e, path }));
  }
}

/**
 * Checks a manifest subscription's `url` (HTTPS) or `destination` (CONTRACT.md "Destinations": an
 * app subscription may deliver to a broker), as an endpoint's are checked; the problems come back
 * with their paths under `at`. A broker URL with the masked password keeps the one the active
 * version has for the same index, only for the same kind, host and port. `url` beside a
 * destination may only repeat its (masked) URL, as a version's manifest shows it.
 */
export async function subscriptionDestination(
  ctx: AppContext,
  subscription: { url?: unknown; destination?: unknown },
  at: string,
  before: string | null,
): Promise<SubscriptionDestination> {
  const given = subscription.destination as DestinationInput | undefined;
  const url = typeof subscription.url === 'string' ? subscription.url : undefined;
  const none = { destination: null, sealed: null };
  if (given === undefined) {
    if (url === undefined)
      return {
        url: '',
        ...none,
        errors: [{ path: `${at}/url`, message: 'a URL or a destination is required' }],
      };
    return { url, ...none, errors: await httpsUrl(ctx, url, `${at}/url`) };
  }
  if (url !== undefined && url !== given.url)
    return {
      url,
      ...none,
      errors: [{ path: `${at}/url`, message: 'give the URL inside destination, not beside it' }],
    };
  let destination: Destination;
  try {
    destination = checkDestination(given, `${at}/destination`);
    if (!isBroker(destination))
      return {
        url: destination.url,
        ...none,
        errors: await httpsUrl(ctx, destination.url, `${at}/destination/url`),
      };
    destination = keptPassword(ctx.secrets, destination, before, `${at}/destination`);
    await assertBrokerAllowed(ctx, destination, `${at}/destination`);
  } catch (error) {
    return { url: '', ...none, errors: fieldErrors(error) };
  }
  return {
    url: maskedBrokerUrl(destination.url),
    destination: maskedDestination(destination),
    sealed: sealDestination(ctx.secrets, destination),
    errors: [],
  };
}

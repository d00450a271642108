import type { SecretBox } from '../../lib/crypto.ts';
import { type FieldError, validationError } from '../../lib/errors.ts';

/** Where a target's messages go (CONTRACT.md "Destinations"): an HTTPS URL or a broker. */
export type Destination = HttpsDestination | BrokerDestination;
export interface HttpsDestination {
  type: 'https';
  url: string;
}
export interface RabbitMqDestination {
  type: 'rabbitmq';
  /** amqp[s]://user:pass@host:port/vhost */
  url: string;
  exchange: string;
  /** May contain `{event_type}`. */
  routing_key: string;
}
export interface NatsDestination {
  type: 'nats';
  /** nats://user:pass@host:port, or tls:// */
  url: string;
  /** A JetStream subject; may contain `{event_type}`. */
  subject: string;
}
export type BrokerDestination = RabbitMqDestination | NatsDestination;

/** The kinds that exist; SQS, EventBridge, Pub/Sub and Kafka are planned (docs/api.md). */
export const DESTINATION_TYPES = ['https', 'rabbitmq', 'nats'] as const;

/** Each broker kind's URL schemes and the port a scheme means when none is written. */
export const BROKER_SCHEMES: Record<BrokerDestination['type'], Record<string, number>> = {
  rabbitmq: { 'amqp:': 5672, 'amqps:': 5671 },
  nats: { 'nats:': 4222, 'tls:': 4222 },
};

/** The schemes that connect with TLS (`tls://` is NATS with TLS required). */
export const TLS_SCHEMES: ReadonlySet<string> = new Set(['amqps:', 'tls:']);

/**
 * How the sealed destination reaches the engine: delivery_targets answers it as the target's url
 * behind this prefix (migration 0070 writes the same text), so the claim carries it unchanged.
 */
export const SEALED_DESTINATION_PREFIX = 'waybill-destination:';

/** What answers, pages and logs show of a password. */
export const MASK = '****';

export function isBroker(destination: Destination): destination is BrokerDestination {
  return destination.type !== 'https';
}

/** A broker URL with its password (if any) masked: what the API, pages and the `url` column hold. */
export function maskedBrokerUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = MASK;
    // NATS takes `nats://TOKEN@host`: a user name without a password is a token, a secret too.
    else if (parsed.username && (parsed.protocol === 'nats:' || parsed.protocol === 'tls:'))
      parsed.username = MASK;
    return parsed.toString();
  } catch {
    return '';
  }
}

export function maskedDestination(destination: Destination): Destination {
  return isBroker(destination) ? { ...destination, url: maskedBrokerUrl(destination.url) } : destination;
}

export function sealDestination(secrets: SecretBox, destination: BrokerDestination): string {
  return secrets.seal(JSON.stringify(destination));
}

export function openDestination(secrets: SecretBox, sealed: string): BrokerDestination {
  return JSON.parse(secrets.open(sealed)) as BrokerDestination;
}

/** The sealed text the engine gets as a broker target's url, or null for an HTTPS one. */
export function sealedOf(targetUrl: string): string | null {
  return targetUrl.startsWith(SEALED_DESTINATION_PREFIX)
    ? targetUrl.slice(SEALED_DESTINATION_PREFIX.length)
    : null;
}

/** The destination as written in a request, before it is checked. */
export interface DestinationInput {
  type?: unknown;
  url?: unknown;
  exchange?: unknown;
  routing_key?: unknown;
  subject?: unknown;
}

/** CONTRACT.md: a bad destination is 422 `validation.failed` with its path. */
export function invalidDestination(errors: FieldError[]) {
  return validationError(errors, 'The destination is not valid', 422);
}

const NAME = /^[\w.{}:>*-]{1,255}$/;

function text(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * The shape checks of a destination (422 `validation.failed` with the path): a known type, a URL
 * of that type's schemes with a host, and the exchange or subject it needs. The address checks are
 * the guard's (destinations/guard.ts).
 */
export function checkDestination(input: DestinationInput, path = '/destination'): Destination {
  const errors: FieldError[] = [];
  const type = input.type;
  if (type !== 'https' && type !== 'rabbitmq' && type !== 'nats') {
    throw invalidDestination([
      { path: `${path}/type`, message: `type must be one of ${DESTINATION_TYPES.join(', ')}` },
    ]);
  }
  const url = text(input.url);
  if (type === 'https') {
    if (!url) throw invalidDestination([{ path: `${path}/url`, message: 'an https URL is required' }]);
    return { type, url };
  }
  const schemes = BROKER_SCHEMES[type];
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (!parsed || !(parsed.protocol in schemes) || !parsed.hostname) {
    errors.push({
      path: `${path}/url`,
      message: `a ${type} URL is ${Object.keys(schemes)
        .map((s) => `${s}//`)
        .join(' or ')}user:password@host:port`,
    });
  }
  if (type === 'rabbitmq') {
    // amqplib would log in as guest/guest without them: the company's own user is required.
    if (parsed && parsed.protocol in schemes && parsed.hostname && !parsed.username)
      errors.push({
        path: `${path}/url`,
        message: 'name the user and password: amqps://user:password@host/vhost',
      });
    const exchange = text(input.exchange);
    const routingKey = input.routing_key === undefined ? '' : text(input.routing_key);
    if (!exchange || !NAME.test(exchange))
      errors.push({ path: `${path}/exchange`, message: 'an exchange name is required' });
    if (typeof input.routing_key !== 'string' && input.routing_key !== undefined)
      errors.push({ path: `${path}/routing_key`, message: 'the routing key is text' });
    if (errors.length > 0) throw invalidDestination(errors);
    return { type, url, exchange, routing_key: routingKey };
  }
  const subject = text(input.subject);
  if (!subject || !NAME.test(subject) || /\s/.test(subject))
    errors.push({ path: `${path}/subject`, message: 'a JetStream subject is required' });
  if (errors.length > 0) throw invalidDestination(errors);
  return { type, url, subject };
}

/** The routing key or subject of one message: `{event_type}` is the message's type. */
export function addressFor(pattern: string, eventType: string): string {
  return pattern.split('{event_type}').join(eventType);
}

/**
 * A broker URL that comes back with the masked password (`****`), or a NATS token masked in the
 * user name, keeps the stored secret only while it names the same kind, scheme, host and port: a
 * secret is never sent to a host it was not given for, nor over plaintext when given for TLS.
 */
export function keptPassword(
  secrets: SecretBox,
  destination: BrokerDestination,
  storedSealed: string | null,
  path = '/destination',
): BrokerDestination {
  const given = new URL(destination.url);
  const maskedToken = !given.password && given.username === MASK;
  if (given.password !== MASK && !maskedToken) return destination;
  const stored = storedSealed ? openDestination(secrets, storedSealed) : null;
  const before = stored ? new URL(stored.url) : null;
  if (
    !stored ||
    !before ||
    stored.type !== destination.type ||
    before.protocol !== given.protocol ||
    before.host !== given.host
  )
    throw invalidDestination([
      { path: `${path}/url`, message: 'state the password: the URL names a new broker' },
    ]);
  if (maskedToken) given.username = before.username;
  else given.password = before.password;
  return { ...destination, url: given.toString() };
}

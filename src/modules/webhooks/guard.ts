import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';

/**
 * The SSRF guard (ISSUE-3 item 2): a webhook URL must be public https. It runs at creation, at
 * update, and at every connection (sender.ts pins the socket to the address checked here).
 */

/** Cloud metadata services, refused by name whatever they resolve to. */
const METADATA_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.internal',
  'metadata.tencentyun.com',
]);

/** Metadata addresses; most already fall in a refused range, listed so that none slips through. */
const METADATA_ADDRESSES = new Set(
  [
    '169.254.169.254',
    '169.254.170.2',
    'fd00:ec2::254',
    '100.100.100.200',
    '192.0.0.192',
    '169.254.169.123',
  ].map((a) => ipaddr.parse(a).toNormalizedString()),
);

export type AddressVerdict = 'public' | 'allowlisted' | 'refused';

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/** The IPv4 address inside IPv4-mapped, NAT64 (RFC 6052) and 6to4 forms; null when there is none. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const range = address.range();
  const bytes = address.toByteArray();
  if (range === 'ipv4Mapped' || range === 'rfc6052' || range === 'rfc6145') {
    return new ipaddr.IPv4(bytes.slice(12, 16));
  }
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6));
  return null;
}

function inAllowlist(address: Parsed, allow: readonly string[]): boolean {
  for (const cidr of allow) {
    const [net, bits] = ipaddr.parseCIDR(cidr);
    if (address.kind() === net.kind() && address.match(net, bits)) return true;
  }
  return false;
}

function isPublic(address: Parsed): boolean {
  if (METADATA_ADDRESSES.has(address.toNormalizedString())) return false;
  if (address.kind() === 'ipv6') {
    const inner = embeddedIPv4(address as ipaddr.IPv6);
    if (inner) return isPublic(inner);
  }
  // Only plain global unicast passes: every special range (loopback, private, link-local, CGNAT,
  // unique-local, multicast, unspecified, reserved, broadcast, Teredo, benchmarking...) is refused.
  return address.range() === 'unicast';
}

/** Classifies one resolved address against the refused ranges and the development allowlist. */
export function classifyAddress(text: string, allow: readonly string[]): AddressVerdict {
  let address: Parsed;
  try {
    address = ipaddr.parse(text);
  } catch {
    return 'refused';
  }
  if (inAllowlist(address, allow)) return 'allowlisted';
  if (address.kind() === 'ipv6') {
    const inner = embeddedIPv4(address as ipaddr.IPv6);
    if (inner && inAllowlist(inner, allow)) return 'allowlisted';
  }
  return isPublic(address) ? 'public' : 'refused';
}

export async function defaultResolveHost(hostname: string): Promise<string[]> {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/** Why a URL or a connection was refused; `dns` when the name does not resolve. */
export class GuardRefusal extends Error {
  readonly kind: 'dns' | 'address';

  constructor(kind: 'dns' | 'address', message: string) {
    super(message);
    this.name = 'GuardRefusal';
    this.kind = kind;
  }
}

/** A URL's host without IPv6 brackets, lower-cased, without a trailing dot. */
export function bareHost(hostname: string): string {
  return hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

/**
 * Resolves a host and checks every address; returns the addresses to connect to (all checked).
 * `plainHttp` demands that every address be in the allowlist.
 */
export async function resolveChecked(ctx: AppContext, host: string, plainHttp: boolean): Promise<string[]> {
  const name = bareHost(host);
  if (METADATA_NAMES.has(name)) throw new GuardRefusal('address', 'cloud metadata hosts are not allowed');
  let addresses: string[];
  if (ipaddr.isValid(name)) addresses = [name];
  else {
    try {
      addresses = await (ctx.resolveHost ?? defaultResolveHost)(name);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw new GuardRefusal('dns', `the host name ${name} does not resolve`);
  }
  const allow = ctx.config.webhookAllowPrivate;
  for (const address of addresses) {
    const verdict = classifyAddress(address, allow);
    if (verdict === 'refused') {
      throw new GuardRefusal(
        'address',
        'the host resolves to a private, loopback, link-local, reserved or metadata address',
      );
    }
    if (plainHttp && verdict !== 'allowlisted') {
      throw new GuardRefusal('address', 'the URL must use https');
    }
  }
  return addresses;
}

/** Refuses, with 422 webhook_endpoint.url_not_allowed, any URL a webhook must not be sent to. */
export async function assertUrlAllowed(ctx: AppContext, url: string): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AppError('webhook_endpoint.url_not_allowed', 'The URL is not a valid absolute URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new AppError('webhook_endpoint.url_not_allowed', 'The URL must use https');
  }
  if (parsed.username || parsed.password) {
    throw new AppError('webhook_endpoint.url_not_allowed', 'The URL must not carry a user name or password');
  }
  if (!parsed.hostname) throw new AppError('webhook_endpoint.url_not_allowed', 'The URL has no host');
  try {
    await resolveChecked(ctx, parsed.hostname, parsed.protocol === 'http:');
  } catch (error) {
    if (error instanceof GuardRefusal) {
      throw new AppError('webhook_endpoint.url_not_allowed', `The URL is not allowed: ${error.message}`);
    }
    throw error;
  }
}

import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { AppError } from '../lib/errors.ts';
import type { DeliveryContext } from './context.ts';

/**
 * The SSRF guard (ISSUE-3 item 2, ISSUE-7 item 6; docs/decisions/0010-url-guard.md): a webhook or
 * events URL must be https on port 443 to a public address. It runs at creation, at update, and at
 * every connection (sender.ts pins the socket to the address checked here).
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

/** Metadata addresses; all fall in a refused block below, listed so that none slips through. */
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

type Block = [ipaddr.IPv4 | ipaddr.IPv6, number];
const blocks = (cidrs: string[]): Block[] => cidrs.map((cidr) => ipaddr.parseCIDR(cidr));

/**
 * IPv4 blocks that reach something other than an ordinary host on the internet: the IANA IPv4
 * Special-Purpose Address Registry (RFC 6890 and its updates), multicast and the reserved class E.
 * Even the registry's few "globally reachable" entries (anycast services, AS112 sinks) are refused:
 * no webhook receiver lives there.
 */
const SPECIAL_IPV4 = blocks([
  '0.0.0.0/8', // "this network" (RFC 791)
  '10.0.0.0/8', // private (RFC 1918)
  '100.64.0.0/10', // shared address space, carrier-grade NAT (RFC 6598)
  '127.0.0.0/8', // loopback (RFC 1122)
  '169.254.0.0/16', // link-local, cloud metadata (RFC 3927)
  '172.16.0.0/12', // private (RFC 1918)
  '192.0.0.0/24', // IETF protocol assignments: DS-Lite, PCP and TURN anycast, NAT64 discovery (RFC 6890)
  '192.0.2.0/24', // documentation TEST-NET-1 (RFC 5737)
  '192.31.196.0/24', // AS112-v4 (RFC 7535)
  '192.52.193.0/24', // AMT (RFC 7450)
  '192.88.99.0/24', // deprecated 6to4 relay anycast (RFC 7526)
  '192.168.0.0/16', // private (RFC 1918)
  '192.175.48.0/24', // AS112 direct delegation (RFC 7534)
  '198.18.0.0/15', // benchmarking (RFC 2544)
  '198.51.100.0/24', // documentation TEST-NET-2 (RFC 5737)
  '203.0.113.0/24', // documentation TEST-NET-3 (RFC 5737)
  '224.0.0.0/4', // multicast (RFC 5771)
  '240.0.0.0/4', // reserved, and the limited broadcast 255.255.255.255 (RFC 1112, RFC 919)
]);

/** Global unicast (RFC 4291 section 2.4): every IPv6 address outside it is refused. */
const GLOBAL_UNICAST_IPV6 = ipaddr.parseCIDR('2000::/3');

/**
 * Blocks inside 2000::/3 from the IANA IPv6 Special-Purpose Address Registry. Everything else the
 * registry lists lies outside 2000::/3 and is refused with it: the unspecified and loopback
 * addresses, IPv4-compatible ::/96 (deprecated, RFC 4291), SIIT's IPv4-translated ::ffff:0:0:0/96
 * (RFC 7915), discard-only 100::/64 (RFC 6666), NAT64's local-use 64:ff9b:1::/48 (RFC 8215: the
 * IPv4 inside sits at a place that depends on the operator's prefix length, so it cannot be
 * checked), SRv6 5f00::/16 (RFC 9602), unique-local fc00::/7, link-local fe80::/10, site-local
 * fec0::/10 and multicast ff00::/8.
 */
const SPECIAL_IPV6 = blocks([
  '2001::/23', // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, AMT, AS112, ORCHID 2001:10::/28 and ORCHIDv2 2001:20::/28, DETs (RFC 2928)
  '2001:db8::/32', // documentation (RFC 3849)
  '2620:4f:8000::/48', // AS112 direct delegation (RFC 7534)
  '3fff::/20', // documentation (RFC 9637)
]);

/** Forms that carry an IPv4 address, and reach it; classified by that address (never allowlisted by it). */
const IPV4_MAPPED = ipaddr.parseCIDR('::ffff:0:0/96'); // RFC 4291 section 2.5.5.2: a dual-stack socket dials the IPv4
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96'); // RFC 6052: the NAT64 in our network dials the IPv4
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16'); // RFC 3056: relayed to the IPv4 in bytes 2 to 5

export type AddressVerdict = 'public' | 'allowlisted' | 'refused';

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Parses an address in the form the WHATWG URL parser gives it (as the sender dials it). ipaddr.js
 * alone reads `::1.2.3.4`, an IPv4-compatible address, as the IPv4-mapped `::ffff:1.2.3.4`, and
 * accepts IPv4 shorthands: the text is made canonical first. Null when it is not an address.
 */
function parseAddress(text: string): Parsed | null {
  try {
    const host = bareHost(new URL(`http://${text.includes(':') ? `[${text}]` : text}/`).hostname);
    return ipaddr.isValid(host) ? ipaddr.parse(host) : null;
  } catch {
    return null;
  }
}

function inBlock(address: Parsed, [net, bits]: Block): boolean {
  return address.kind() === net.kind() && address.match(net, bits);
}

/** The IPv4 address a mapped, NAT64 well-known-prefix or 6to4 address reaches; null for the others. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const bytes = address.toByteArray();
  if (inBlock(address, IPV4_MAPPED) || inBlock(address, NAT64_WELL_KNOWN)) {
    return new ipaddr.IPv4(bytes.slice(12, 16));
  }
  if (inBlock(address, SIX_TO_FOUR)) return new ipaddr.IPv4(bytes.slice(2, 6));
  return null;
}

function inAllowlist(address: Parsed, allow: readonly string[]): boolean {
  return allow.some((cidr) => inBlock(address, ipaddr.parseCIDR(cidr)));
}

/** Whether an address reaches an ordinary host on the internet (and not a metadata service). */
function isPublic(address: Parsed): boolean {
  if (METADATA_ADDRESSES.has(address.toNormalizedString())) return false;
  if (address.kind() === 'ipv4') return !SPECIAL_IPV4.some((block) => inBlock(address, block));
  const inner = embeddedIPv4(address as ipaddr.IPv6);
  if (inner) return isPublic(inner);
  return inBlock(address, GLOBAL_UNICAST_IPV6) && !SPECIAL_IPV6.some((block) => inBlock(address, block));
}

/**
 * Classifies the address that will be dialled. The development allowlist is compared with that
 * address only: `::ffff:127.0.0.1` or `64:ff9b::7f00:1` are not in `127.0.0.0/8`, and are refused
 * by what they reach unless the allowlist names them as they are written.
 */
export function classifyAddress(text: string, allow: readonly string[]): AddressVerdict {
  const address = parseAddress(text);
  if (!address) return 'refused';
  if (inAllowlist(address, allow)) return 'allowlisted';
  return isPublic(address) ? 'public' : 'refused';
}

/**
 * The port policy: https on its own port, 443, and nothing else, for a public address. Other ports
 * and plain http are for the development allowlist only. A receiver needs no other port, and the
 * test send would otherwise probe any service of any public host (docs/decisions/0010-url-guard.md).
 */
export function needsAllowlist(protocol: string, port: string | number | null | undefined): boolean {
  if (protocol !== 'https:') return true;
  return !(port === undefined || port === null || port === '' || Number(port) === 443);
}

/** What a refusal says about the scheme and port, when those are what needs the allowlist. */
const HTTPS_443 = 'the URL must use https on port 443';

/**
 * The checks that need no name resolution, for a parsed URL: scheme, credentials, host, and for an
 * address written in the URL, the address and the port policy. Answers why the URL is refused, or
 * null. (A host name is resolved and checked by resolveChecked, at creation and at every connection.)
 */
export function urlShapeProblem(url: URL, allow: readonly string[]): string | null {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the URL must use https';
  if (url.username || url.password) return 'the URL must not carry a user name or password';
  const host = bareHost(url.hostname);
  if (!host) return 'the URL has no host';
  if (!ipaddr.isValid(host)) return null;
  const verdict = classifyAddress(host, allow);
  if (verdict === 'refused') {
    return 'the address is private, loopback, link-local, reserved, special-purpose or a metadata service';
  }
  if (verdict !== 'allowlisted' && needsAllowlist(url.protocol, url.port)) return HTTPS_443;
  return null;
}

export async function defaultResolveHost(hostname: string): Promise<string[]> {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/** How long a name resolved for the outbound budget keeps its answer for the connection that follows. */
const PIN_MS = 15_000;
const pins = new WeakMap<object, Map<string, { addresses: string[]; until: number }>>();

/**
 * The addresses a host name resolves to (none when it does not). With `pin`, the answer is kept
 * for the next PIN_MS and the guard's connections to that name use it rather than look again: the
 * outbound budget counts the addresses it resolved (decision 0032), and a name that answers
 * otherwise a moment later (DNS rebinding) does not send the counted request somewhere uncounted.
 * The guard checks pinned addresses like any others.
 */
export async function resolveName(
  ctx: DeliveryContext,
  host: string,
  options: { pin?: boolean } = {},
): Promise<string[]> {
  const name = bareHost(host);
  if (ipaddr.isValid(name)) return [name];
  let byName = pins.get(ctx);
  const pinned = byName?.get(name);
  if (!options.pin && pinned && pinned.until > performance.now()) return pinned.addresses;
  let addresses: string[];
  try {
    addresses = await (ctx.resolveHost ?? defaultResolveHost)(name);
  } catch {
    addresses = [];
  }
  if (options.pin && addresses.length > 0) {
    if (!byName) {
      byName = new Map();
      pins.set(ctx, byName);
    }
    if (byName.size >= 1000) byName.clear();
    byName.set(name, { addresses, until: performance.now() + PIN_MS });
  }
  return addresses;
}

/**
 * Why a URL or a connection was refused; `dns` when the name does not resolve, `insecure` when a
 * broker on a public address is named without TLS.
 */
export class GuardRefusal extends Error {
  readonly kind: 'dns' | 'address' | 'insecure';

  constructor(kind: 'dns' | 'address' | 'insecure', message: string) {
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
 * `plainHttp` (or a `port` other than 443) demands that every address be in the allowlist.
 */
export async function resolveChecked(
  ctx: DeliveryContext,
  host: string,
  plainHttp: boolean,
  port?: string | number | null,
): Promise<string[]> {
  return resolveCheckedAddresses(ctx, host, needsAllowlist(plainHttp ? 'http:' : 'https:', port));
}

/**
 * resolveChecked for any protocol (a broker's too): `restricted` demands that every address be in
 * the allowlist (a port or scheme that a public receiver has no need of).
 */
export async function resolveCheckedAddresses(
  ctx: DeliveryContext,
  host: string,
  restricted: boolean,
  restrictedWhy = HTTPS_443,
): Promise<string[]> {
  const name = bareHost(host);
  if (METADATA_NAMES.has(name)) throw new GuardRefusal('address', 'cloud metadata hosts are not allowed');
  const addresses = await resolveName(ctx, name);
  if (addresses.length === 0) throw new GuardRefusal('dns', `the host name ${name} does not resolve`);
  const allow = ctx.config.webhookAllowPrivate;
  for (const address of addresses) {
    const verdict = classifyAddress(address, allow);
    if (verdict === 'refused') {
      throw new GuardRefusal(
        'address',
        'the host resolves to a private, loopback, link-local, reserved, special-purpose or metadata address',
      );
    }
    if (restricted && verdict !== 'allowlisted') throw new GuardRefusal('address', restrictedWhy);
  }
  return addresses;
}

/**
 * The guard of one outgoing connection, from what undici's connector is given: the host, the
 * scheme and the port. Answers the checked addresses to dial.
 */
export function checkConnection(
  ctx: DeliveryContext,
  target: { hostname: string; protocol: string; port?: string | number | null },
): Promise<string[]> {
  return resolveChecked(ctx, target.hostname, target.protocol === 'http:', target.port);
}

/** Refuses, with 422 webhook_endpoint.url_not_allowed, any URL a webhook must not be sent to. */
export async function assertUrlAllowed(
  ctx: DeliveryContext,
  url: string,
  options: { allowUnresolved?: boolean } = {},
): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AppError('webhook_endpoint.url_not_allowed', 'The URL is not a valid absolute URL');
  }
  const problem = urlShapeProblem(parsed, ctx.config.webhookAllowPrivate);
  if (problem) throw new AppError('webhook_endpoint.url_not_allowed', `The URL is not allowed: ${problem}`);
  try {
    await checkConnection(ctx, parsed);
  } catch (error) {
    // A name that does not resolve yet cannot reach anything; the guard checks again at connect.
    if (error instanceof GuardRefusal && error.kind === 'dns' && options.allowUnresolved) return;
    if (error instanceof GuardRefusal) {
      throw new AppError('webhook_endpoint.url_not_allowed', `The URL is not allowed: ${error.message}`);
    }
    throw error;
  }
}

import ipaddr from 'ipaddr.js';

/**
 * The one key of "an address" for every per-address limit and budget (sign-in, sign-up, OAuth,
 * the store's checks, the outbound budget): an IPv4 address as it is; an IPv6 address by its /64,
 * since one subscriber (a home, a server) is given a whole /64 and chooses freely among its 2^64
 * addresses; an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, as a dual-stack socket reports IPv4
 * peers) as the IPv4 it is. Text that is not an address is kept as it is.
 */
export function addressKey(address: string): string {
  const text = address.trim().replace(/^\[|\]$/g, '');
  // A zone (`fe80::1%eth0`) names an interface, not another address.
  const bare = text.replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return text;
  const parsed = ipaddr.parse(bare);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const parts = v6.parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(':')}::/64`;
}

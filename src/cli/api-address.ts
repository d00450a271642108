/**
 * Where a client command may send a credential (issue 39 item 7): https anywhere, plain http only
 * to this machine. A session token or an API key sent over plain http to another host can be read
 * by anyone on the way.
 */

/** localhost, 127.0.0.0/8 and ::1: the host names a loopback interface. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return (
    host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host)
  );
}

/** Why `api` may not carry a credential, or null when it may. `option` names where it came from. */
export function apiAddressProblem(api: string, option: string): string | null {
  if (!URL.canParse(api)) return `${option} must be an http:// or https:// URL`;
  const url = new URL(api);
  if (url.protocol === 'https:') return null;
  if (url.protocol !== 'http:') return `${option} must be an http:// or https:// URL`;
  if (isLoopbackHost(url.hostname)) return null;
  return `${option} must use https:// for ${url.host}: plain http:// is only for this machine (localhost, 127.0.0.1, ::1), as your credential would cross the network unencrypted`;
}

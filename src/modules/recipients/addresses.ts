import { createHmac } from 'node:crypto';
import { derivedKey } from '../../lib/crypto.ts';

/** The address as the log shows it: `g***@e***.test`. */
export function maskAddress(address: string): string {
  const [local = '', domain = ''] = address.split('@');
  const dot = domain.lastIndexOf('.');
  const host = dot > 0 ? domain.slice(0, dot) : domain;
  const tld = dot > 0 ? domain.slice(dot) : '';
  return `${local.slice(0, 1)}***@${host.slice(0, 1)}***${tld}`;
}

/** A keyed hash of a normalised address: the unsubscribe list keeps this, never the address. */
export function addressHash(secretKey: Buffer, address: string): string {
  return createHmac('sha256', derivedKey(secretKey, 'recipient-unsubscribe'))
    .update(address.trim().toLowerCase())
    .digest('base64url');
}

import type { DeliveryContext } from './context.ts';

/**
 * Names Waybill sets on every message or that belong to HTTP itself (CONTRACT.md): a custom header
 * may not replace or smuggle them. The API refuses them (modules/webhooks/controls.ts); the engine
 * leaves them out again when it sends, whatever is stored.
 */
const RESERVED_NAMES = new Set([
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'user-agent',
  'host',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'date',
  'forwarded',
  'via',
]);
const RESERVED_PREFIXES = ['webhook-', 'proxy-', 'x-forwarded-', ':'];

/** RFC 9110 section 5.1: a field name is a token. */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** RFC 9110 section 5.5, in ASCII: visible characters, spaces and tabs; no CR, LF or NUL. */
export const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_NAMES.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** Names whose values are credentials: shown masked when read back, and in the attempt log. */
const SECRET_NAME = /authorization|cookie|token|secret|key|password|signature|auth/i;
const MASK = '••••••••';

/** A header value as read back: credentials masked, keeping their last 4 characters when long enough. */
export function maskedValue(name: string, value: string): string {
  if (!SECRET_NAME.test(name)) return value;
  return value.length >= 16 ? `${MASK}${value.slice(-4)}` : MASK;
}

/** Opened custom headers by sealed text: the worker sends many messages per endpoint, AES once is enough. */
const opened = new Map<string, ReadonlyArray<readonly [string, string]>>();

/**
 * An endpoint's custom headers as they go on the wire (lower-case names), opened from their sealed
 * JSON object: reserved names and values that are not one line of text are left out, so that no
 * stored value can replace a header Waybill sets or split the request.
 */
export function customHeaders(
  ctx: DeliveryContext,
  sealed: string | null | undefined,
): ReadonlyArray<readonly [string, string]> {
  if (!sealed) return [];
  let headers = opened.get(sealed);
  if (headers === undefined) {
    const stored = JSON.parse(ctx.secrets.open(sealed)) as Record<string, unknown>;
    headers = Object.entries(stored)
      .filter(
        (entry): entry is [string, string] =>
          typeof entry[1] === 'string' &&
          HEADER_NAME.test(entry[0]) &&
          HEADER_VALUE.test(entry[1]) &&
          !isReservedHeader(entry[0]),
      )
      .map(([name, value]) => [name.toLowerCase(), value] as const);
    if (opened.size >= 1000) opened.clear();
    opened.set(sealed, headers);
  }
  return headers;
}

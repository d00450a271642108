import { HEADER_NAME, HEADER_VALUE, isReservedHeader, maskedValue } from '../../delivery/headers.ts';
import type { WebhookEndpointsTable } from '../../delivery/tables.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { AppError, type FieldError, validationError } from '../../lib/errors.ts';

/** CONTRACT.md: at most 10 custom headers an endpoint. */
export const MAX_CUSTOM_HEADERS = 10;
export const MAX_HEADER_VALUE = 1000;
export const RATE_LIMIT_MAX = 10_000;

export type Ordering = 'none' | 'per_shipment';
export const ORDERINGS: readonly Ordering[] = ['none', 'per_shipment'];

/** The rate limit as the API schema allows it; pages pass through here too. */
export function checkRateLimit(value: number | null): number | null {
  if (value === null) return null;
  if (!Number.isInteger(value) || value < 1 || value > RATE_LIMIT_MAX)
    throw validationError([
      { path: '/rate_limit', message: `must be a whole number from 1 to ${RATE_LIMIT_MAX}, or none` },
    ]);
  return value;
}

export function checkOrdering(value: string): Ordering {
  const ordering = ORDERINGS.find((o) => o === value);
  if (!ordering)
    throw validationError([{ path: '/ordering', message: `must be one of ${ORDERINGS.join(', ')}` }]);
  return ordering;
}

/**
 * The custom headers as given, checked: names are tokens, none reserved (422), none twice in any
 * letter case, values one line each. A value equal to what reading masked (a client that sends back
 * what it read) keeps the stored one. Answers the object to store, null for none.
 */
export function checkCustomHeaders(
  input: Record<string, string> | null,
  stored: Record<string, string> | null,
  options: { newUrl?: boolean } = {},
): Record<string, string> | null {
  if (input === null) return null;
  const keptMasked: FieldError[] = [];
  const entries = Object.entries(input).map(([name, value]): [string, string] => {
    const before = storedValue(stored, name);
    const sentBackMasked = before !== undefined && value !== before && value === maskedValue(name, before);
    // A value the caller cannot read does not follow the endpoint to another URL (issue 30 item 3).
    if (sentBackMasked && options.newUrl)
      keptMasked.push({
        path: `/headers/${name}`,
        message: 'is masked: state its value in full for the new url',
      });
    return [name, sentBackMasked ? before : value];
  });
  if (keptMasked.length > 0) throw headersRequired(keptMasked);
  const malformed: FieldError[] = [];
  const reserved: FieldError[] = [];
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    const path = `/headers/${name}`;
    if (!HEADER_NAME.test(name)) malformed.push({ path, message: 'is not a valid header name' });
    else if (isReservedHeader(name)) reserved.push({ path, message: 'is set by Waybill or by HTTP itself' });
    else if (seen.has(name.toLowerCase())) malformed.push({ path, message: 'is given twice' });
    seen.add(name.toLowerCase());
    if (typeof value !== 'string' || !HEADER_VALUE.test(value) || value.length > MAX_HEADER_VALUE)
      malformed.push({ path, message: `must be one line of at most ${MAX_HEADER_VALUE} characters` });
  }
  if (entries.length > MAX_CUSTOM_HEADERS)
    malformed.push({ path: '/headers', message: `at most ${MAX_CUSTOM_HEADERS} headers` });
  if (malformed.length > 0) throw validationError(malformed);
  if (reserved.length > 0) throw validationError(reserved, 'These header names are reserved', 422);
  return entries.length === 0 ? null : Object.fromEntries(entries);
}

function storedValue(stored: Record<string, string> | null, name: string): string | undefined {
  if (!stored) return undefined;
  const lower = name.toLowerCase();
  return Object.entries(stored).find(([key]) => key.toLowerCase() === lower)?.[1];
}

export function sealHeaders(secrets: SecretBox, headers: Record<string, string> | null): string | null {
  return headers === null ? null : secrets.seal(JSON.stringify(headers));
}

export function openHeaders(
  secrets: SecretBox,
  row: Pick<WebhookEndpointsTable, 'headers_sealed'>,
): Record<string, string> | null {
  if (!row.headers_sealed) return null;
  return JSON.parse(secrets.open(row.headers_sealed)) as Record<string, string>;
}

/** The headers as the API and pages show them. */
export function presentHeaders(headers: Record<string, string> | null): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) shown[name] = maskedValue(name, value);
  return shown;
}

/**
 * 422 webhook_endpoint.headers_required: a new `url` for an endpoint with custom headers, without
 * `headers` stated in full (or cleared). Their values may be credentials the caller cannot read
 * (they come back masked); sending them on to a host the caller chose would hand them over.
 */
export function headersRequired(
  errors: FieldError[] = [
    { path: '/headers', message: 'state the headers for the new url, or null to clear them' },
  ],
): AppError {
  return new AppError(
    'webhook_endpoint.headers_required',
    'A new url takes the custom headers only when they are stated in full with it (or cleared with null)',
    { errors },
  );
}

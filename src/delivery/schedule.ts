import { DAY, HOUR, MINUTE, SECOND } from '../lib/clock.ts';

/** Spec 6.4: the waits after the 1st..8th failed attempt; the 9th failure ends the delivery. */
export const RETRY_DELAYS_MS = [
  30 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY,
  DAY,
] as const;

export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** The 3-day rule (spec 3.3): an endpoint failing this long without a 2xx is disabled. */
export const FAILING_DISABLE_MS = 3 * DAY;

/** CONTRACT.md: a failing streak is told (webhook_endpoint.failing) once it has lasted this long. */
export const FAILING_NOTICE_MS = DAY;

/** Returns a number in [0, 1); injectable so tests get a fixed schedule. */
export type Jitter = () => number;

/** Up to +10%, so that a burst of failures does not come back as one burst. */
export const JITTER_SHARE = 0.1;

/**
 * When the next attempt is due after `attempts` attempts have failed, or null when there is none
 * left (the delivery has failed for good).
 */
export function nextAttemptAt(attempts: number, failedAt: Date, jitter: Jitter = Math.random): Date | null {
  const delay = RETRY_DELAYS_MS[attempts - 1];
  if (delay === undefined) return null;
  return new Date(failedAt.getTime() + Math.round(delay * (1 + JITTER_SHARE * jitter())));
}

/** CONTRACT.md: a receiver's Retry-After pauses its endpoint for an hour at most. */
export const MAX_PAUSE_MS = HOUR;

/**
 * Until when a receiver's answer pauses its endpoint: a 429 or 503 with a `Retry-After` of seconds
 * or an HTTP date (RFC 9110 section 10.2.3), capped at MAX_PAUSE_MS from the attempt. Null when
 * the answer asks for no pause (another status, no header, a time already past, or a value that
 * is neither).
 */
export function pauseOf(
  result: { status_code: number | null; retry_after?: string | null },
  attemptedAt: Date,
): Date | null {
  if ((result.status_code !== 429 && result.status_code !== 503) || !result.retry_after) return null;
  const value = result.retry_after.trim();
  const at = attemptedAt.getTime();
  let until: number;
  if (/^\d+$/.test(value)) until = at + Number(value) * SECOND;
  else {
    until = Date.parse(value);
    if (Number.isNaN(until) || !/[a-z]/i.test(value)) return null;
  }
  if (until <= at) return null;
  return new Date(Math.min(until, at + MAX_PAUSE_MS));
}

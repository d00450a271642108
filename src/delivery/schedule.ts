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

import { DAY } from '../../../lib/clock.ts';

/** Spec section 8: after 3 rejections within 90 days, new submissions wait 30 days from the third. */
export const REJECTIONS_LIMIT = 3;
export const REJECTION_WINDOW_MS = 90 * DAY;
export const COOLING_DOWN_MS = 30 * DAY;

/** How far back rejections can still matter: a window that ends when a wait starts, plus the wait. */
export const REJECTIONS_LOOKBACK_MS = REJECTION_WINDOW_MS + COOLING_DOWN_MS;

/**
 * When new submissions open again, or null when they are open now. Any 3 rejections within 90
 * days start a 30-day wait at the third of them; a later run of 3 starts a new wait.
 */
export function submissionsOpenAt(rejections: readonly Date[], now: Date): Date | null {
  const times = rejections.map((d) => d.getTime()).sort((a, b) => a - b);
  let opensAt: number | null = null;
  for (let i = REJECTIONS_LIMIT - 1; i < times.length; i++) {
    const third = times[i] as number;
    const first = times[i - REJECTIONS_LIMIT + 1] as number;
    if (third - first > REJECTION_WINDOW_MS) continue;
    const end = third + COOLING_DOWN_MS;
    if (end > now.getTime() && (opensAt === null || end > opensAt)) opensAt = end;
  }
  return opensAt === null ? null : new Date(opensAt);
}

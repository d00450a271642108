import { type RawBuilder, sql } from 'kysely';
import { DAY } from '../lib/clock.ts';

/**
 * The most a first attempt kept in its delivery comes after the delivery was made (migration
 * 0065's `KEPT_WITHIN`, decision 0060).
 */
export const KEPT_WITHIN_MS = DAY;

/**
 * Attempts of `webhook_attempt_log` (alias `log`, or none) made from `from` to `to`, bounded by
 * `indexed_at` as well: each part of the log is then read by its own index, the attempt rows by
 * time and the attempts kept in deliveries by the deliveries' making.
 */
export function attemptedBetween(from: Date, to: Date, log?: string): RawBuilder<unknown> {
  const column = (name: string) => sql.ref(log ? `${log}.${name}` : name);
  return sql`${column('attempted_at')} >= ${from} AND ${column('attempted_at')} <= ${to}
    AND ${column('indexed_at')} >= ${new Date(from.getTime() - KEPT_WITHIN_MS)} AND ${column('indexed_at')} <= ${to}`;
}

import { DAY } from '../../../lib/clock.ts';
import { validationError } from '../../../lib/errors.ts';
import { characterCount } from '../listing/rules.ts';

/** CONTRACT.md "Store trust". */
export const REVIEW_BODY_MAX = 2000;
export const REPLY_BODY_MAX = 2000;
export const HIDE_REASON_MAX = 500;
/** A company reviews an app it has used: its installation has been in force this long. */
export const REVIEW_AFTER_MS = 7 * DAY;
export const REVIEWING_ROLES = ['owner', 'admin'];

/** The text as stored: trimmed, 1 to `max` characters as people count them. */
export function reviewText(value: string, path: string, max: number): string {
  const trimmed = value.trim();
  const length = characterCount(trimmed);
  if (length === 0)
    throw validationError([{ path, message: 'must not be empty' }], `${path} must not be empty`);
  if (length > max)
    throw validationError(
      [{ path, message: `is longer than ${max} characters` }],
      `${path} is longer than ${max} characters`,
    );
  return trimmed;
}

export function checkRating(rating: number): number {
  if (!Number.isInteger(rating) || rating < 1 || rating > 5) {
    throw validationError(
      [{ path: '/rating', message: 'must be a whole number from 1 to 5' }],
      'Give 1 to 5 stars',
    );
  }
  return rating;
}

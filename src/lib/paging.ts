import { AppError } from './errors.ts';

/** Cursor paging (CONTRACT.md): newest first, by (created_at, id), the cursor opaque to clients. */
export interface PageRequest {
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export interface CursorPosition {
  createdAt: Date;
  id: string;
}

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
}

/**
 * What a cursor of ours holds: an id, and a time of a record: from 1970 (PostgreSQL refuses year
 * 0000, and no record is older) to year 9999.
 */
const CURSOR_ID = /^[A-Za-z0-9_-]{1,100}$/;
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MAX_CURSOR_LENGTH = 300;

/** The position a cursor of ours names, or null for none; anything else is 400 validation.failed. */
export function decodeCursor(cursor: string | undefined): CursorPosition | null {
  if (cursor === undefined || cursor === '') return null;
  const position =
    cursor.length <= MAX_CURSOR_LENGTH && /^[A-Za-z0-9_-]+$/.test(cursor) ? parse(cursor) : null;
  if (position) return position;
  throw new AppError('validation.failed', 'The cursor is not valid', {
    errors: [{ path: '/cursor', message: 'not a cursor from this list' }],
  });
}

function parse(cursor: string): CursorPosition | null {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [time, id] = value as unknown[];
  if (typeof time !== 'string' || typeof id !== 'string' || !CURSOR_TIME.test(time) || !CURSOR_ID.test(id)) {
    return null;
  }
  const createdAt = new Date(time);
  // Rejects what the pattern lets through but the calendar does not (2026-02-31).
  if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== time || createdAt.getTime() < 0) {
    return null;
  }
  return { createdAt, id };
}

export function pageLimit(limit: number | undefined): number {
  return Math.min(Math.max(limit ?? DEFAULT_LIMIT, 1), MAX_LIMIT);
}

/**
 * Turns rows fetched with `limit + 1` into a page: the extra row only says whether there is more.
 */
export function toPage<Row extends { created_at: Date; id: string }, T>(
  rows: Row[],
  limit: number,
  present: (row: Row) => T,
): Page<T> {
  const more = rows.length > limit;
  const shown = more ? rows.slice(0, limit) : rows;
  const last = shown.at(-1);
  return {
    data: shown.map(present),
    next_cursor: more && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
  };
}

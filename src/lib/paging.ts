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

export function decodeCursor(cursor: string | undefined): CursorPosition | null {
  if (cursor === undefined || cursor === '') return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string'
    ) {
      const createdAt = new Date(value[0]);
      if (!Number.isNaN(createdAt.getTime())) return { createdAt, id: value[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw new AppError('validation.failed', 'The cursor is not valid', {
    errors: [{ path: '/cursor', message: 'not a cursor from this list' }],
  });
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

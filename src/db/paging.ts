import {
  type ExpressionBuilder,
  type ExpressionWrapper,
  type SelectQueryBuilder,
  type SqlBool,
  sql,
} from 'kysely';
import { decodeCursor, type Page, type PageRequest, pageLimit, toPage } from '../lib/paging.ts';

/**
 * The keyset condition `(created_at, id) < cursor` for newest-first lists.
 * Tables listed this way carry created_at and id columns.
 */
export function afterCursor(table: string, cursor: string | undefined) {
  const position = decodeCursor(cursor);
  // biome-ignore lint/suspicious/noExplicitAny: the builder is shared by every table that has created_at and id.
  return (eb: ExpressionBuilder<any, any>): ExpressionWrapper<any, any, SqlBool> => {
    if (!position) return eb.val(true) as unknown as ExpressionWrapper<never, never, SqlBool>;
    return eb(
      sql`(${sql.ref(`${table}.created_at`)}, ${sql.ref(`${table}.id`)})`,
      '<',
      sql`(${position.createdAt}::timestamptz, ${position.id}::text)`,
    );
  };
}

/**
 * One page of a list, newest first: the keyset condition, the order and the limit that every
 * list shares. `table` names the table whose created_at and id order the list.
 */
export async function newestFirst<Row extends { created_at: Date; id: string }, T>(
  // biome-ignore lint/suspicious/noExplicitAny: any table's query; its rows are what matter.
  query: SelectQueryBuilder<any, any, Row>,
  table: string,
  request: PageRequest,
  present: (row: Row) => T,
): Promise<Page<T>> {
  const limit = pageLimit(request.limit);
  const rows = await query
    .where(afterCursor(table, request.cursor))
    .orderBy(sql.ref(`${table}.created_at`), 'desc')
    .orderBy(sql.ref(`${table}.id`), 'desc')
    .limit(limit + 1)
    .execute();
  return toPage(rows, limit, present);
}

/**
 * One page of a list, oldest first (queues): the mirror of newestFirst, `(created_at, id) > cursor`.
 */
export async function oldestFirst<Row extends { created_at: Date; id: string }, T>(
  // biome-ignore lint/suspicious/noExplicitAny: any table's query; its rows are what matter.
  query: SelectQueryBuilder<any, any, Row>,
  table: string,
  request: PageRequest,
  present: (row: Row) => T,
): Promise<Page<T>> {
  const limit = pageLimit(request.limit);
  const position = decodeCursor(request.cursor);
  const after = position
    ? query.where(
        sql<boolean>`(${sql.ref(`${table}.created_at`)}, ${sql.ref(`${table}.id`)}) > (${position.createdAt}::timestamptz, ${position.id}::text)`,
      )
    : query;
  const rows = await after
    .orderBy(sql.ref(`${table}.created_at`), 'asc')
    .orderBy(sql.ref(`${table}.id`), 'asc')
    .limit(limit + 1)
    .execute();
  return toPage(rows, limit, present);
}

import { type ExpressionBuilder, type ExpressionWrapper, type SqlBool, sql } from 'kysely';
import { decodeCursor } from '../lib/paging.ts';

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

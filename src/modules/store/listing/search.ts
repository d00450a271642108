import { type RawBuilder, sql } from 'kysely';
import type { Lang } from './categories.ts';

/**
 * Full text search over the listing (issue 33), the same on PGlite and PostgreSQL: the built-in
 * `english` and `spanish` configurations (stemming and stop words), over text with its accents
 * folded, since people type "envio" for "envío". The folding is `translate`, not the `unaccent`
 * extension, which the embedded engine does not load (decision 0040).
 */
export const SEARCH_CONFIG: Record<Lang, string> = { en: 'english', es: 'spanish' };

const ACCENTED = 'áàâäãåéèêëíìîïóòôöõúùûüñçÁÀÂÄÃÅÉÈÊËÍÌÎÏÓÒÔÖÕÚÙÛÜÑÇ';
const PLAIN = 'aaaaaaeeeeiiiiooooouuuuncAAAAAAEEEEIIIIOOOOOUUUUNC';

/** A value, or a column (`sql.ref`) when documents are rebuilt in bulk. */
type Text = string | RawBuilder<unknown> | ReturnType<typeof sql.ref>;

function folded(text: Text): RawBuilder<string> {
  return sql<string>`translate(${text}::text, ${ACCENTED}::text, ${PLAIN}::text)`;
}

/** The weighted document of one language: the name first, then the tagline, then the description. */
export function searchDocument(
  lang: Lang,
  texts: { name: Text; tagline: Text; description: Text },
): RawBuilder<unknown> {
  const config = sql.lit(SEARCH_CONFIG[lang]);
  return sql`setweight(to_tsvector(${config}::regconfig, ${folded(texts.name)}), 'A')
    || setweight(to_tsvector(${config}::regconfig, ${folded(texts.tagline)}), 'B')
    || setweight(to_tsvector(${config}::regconfig, ${folded(texts.description)}), 'C')`;
}

/** What a person typed, as a query of the language (quotes, `or` and `-word` as web search has them). */
export function searchQuery(lang: Lang, q: string): RawBuilder<unknown> {
  return sql`websearch_to_tsquery(${sql.lit(SEARCH_CONFIG[lang])}::regconfig, ${folded(q)})`;
}

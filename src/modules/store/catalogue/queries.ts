import { type ExpressionBuilder, sql } from 'kysely';
import type { AppContext } from '../../../context.ts';
import { newestFirst } from '../../../db/paging.ts';
import type { Database } from '../../../db/schema.ts';
import { AppError } from '../../../lib/errors.ts';
import { type Page, type PageRequest, pageLimit } from '../../../lib/paging.ts';
import { membershipOf, membershipsOfPerson } from '../../accounts/companies.ts';
import { SCOPE_DESCRIPTIONS, type Scope } from '../../accounts/roles.ts';
import { jsonArray } from '../../apps/registry.ts';
import { categoryLabel, type Lang } from '../listing/categories.ts';
import type { ScopeJustification } from '../listing/rules.ts';
import { searchQuery } from '../listing/search.ts';
import type { MediaRef } from '../media/images.ts';
import { mediaSet } from '../media/service.ts';

/** A published app as the App Store shows it, in one language. */
export interface StoreApp {
  id: string;
  name: string;
  tagline: string;
  /** The description in `lang`. */
  description: string;
  /** The language of `description`: the one asked for, or English when there is no Spanish text. */
  lang: Lang;
  category: string;
  category_label: string;
  app_url: string;
  homepage_url: string | null;
  privacy_url: string | null;
  support_url: string | null;
  scopes: { scope: string; description: string; justification: string }[];
  /** Whether the company asked about (or one of the caller's companies) has it installed. */
  installed: boolean;
  published_at: string;
  icon_url: string | null;
  screenshots: MediaRef[];
  /** The mean of the shown reviews' ratings, two decimals; null before the first review. */
  rating_avg: number | null;
  review_count: number;
  /** How many shown reviews gave each number of stars. */
  rating_distribution: Record<'1' | '2' | '3' | '4' | '5', number>;
  /** The installation count as a bucket: `<10`, `10+`, `100+`, `1000+`. */
  installs: InstallBucket;
}

export const STORE_SORTS = ['relevance', 'rating', 'installs', 'newest'] as const;
export type StoreSort = (typeof STORE_SORTS)[number];
export type InstallBucket = '<10' | '10+' | '100+' | '1000+';

export function installBucket(count: number): InstallBucket {
  if (count >= 1000) return '1000+';
  if (count >= 100) return '100+';
  if (count >= 10) return '10+';
  return '<10';
}

export interface StoreQuery extends PageRequest {
  lang?: Lang;
  category?: string;
  q?: string;
  sort?: StoreSort;
  tenant_id?: string;
}

/**
 * The accounts whose installations count for `installed`: the company asked about (the person must
 * be a member; a merchant member counts only its own account), or else every membership of theirs.
 */
async function installationPlaces(
  ctx: AppContext,
  userId: string,
  tenantId: string | undefined,
): Promise<{ tenant_id: string; customer_account_id: string | null }[]> {
  if (tenantId) {
    const membership = await membershipOf(ctx, userId, tenantId);
    return [{ tenant_id: membership.tenant_id, customer_account_id: membership.customer_account_id }];
  }
  return (await membershipsOfPerson(ctx, userId)).map((m) => ({
    tenant_id: m.tenant_id,
    customer_account_id: m.customer_account_id,
  }));
}

async function installedAppIds(
  ctx: AppContext,
  userId: string,
  tenantId: string | undefined,
  appIds: string[],
): Promise<Set<string>> {
  const places = await installationPlaces(ctx, userId, tenantId);
  if (places.length === 0 || appIds.length === 0) return new Set();
  const rows = await ctx.db
    .selectFrom('installations')
    .select('app_id')
    .where('app_id', 'in', appIds)
    .where((eb) =>
      eb.or(
        places.map((place) =>
          place.customer_account_id
            ? eb.and([
                eb('tenant_id', '=', place.tenant_id),
                eb('customer_account_id', '=', place.customer_account_id),
              ])
            : eb('tenant_id', '=', place.tenant_id),
        ),
      ),
    )
    .execute();
  return new Set(rows.map((row) => row.app_id));
}

function publishedApps(ctx: AppContext) {
  return ctx.db
    .selectFrom('store_listings')
    .innerJoin('apps', 'apps.id', 'store_listings.app_id')
    .leftJoin('app_store_stats as stats', 'stats.app_id', 'store_listings.app_id')
    .select([
      'store_listings.icon',
      'store_listings.screenshots',
      'stats.install_count',
      'stats.review_count',
      'stats.rating_sum',
      'stats.rating_1',
      'stats.rating_2',
      'stats.rating_3',
      'stats.rating_4',
      'stats.rating_5',
      'apps.id',
      'apps.name',
      'apps.homepage_url',
      'apps.privacy_url',
      'apps.support_url',
      'apps.scopes',
      'apps.created_at',
      'store_listings.tagline',
      'store_listings.description_en',
      'store_listings.description_es',
      'store_listings.category',
      'store_listings.app_url',
      'store_listings.scope_justifications',
      'store_listings.published_at',
    ])
    .where('apps.status', '=', 'published');
}

type PublishedRow = Awaited<ReturnType<ReturnType<typeof publishedApps>['executeTakeFirstOrThrow']>>;

/** The rating of the shown reviews, from the stats row (absent before any installation or review). */
export function ratingOf(stats: {
  review_count: number | null;
  rating_sum: number | null;
  rating_1: number | null;
  rating_2: number | null;
  rating_3: number | null;
  rating_4: number | null;
  rating_5: number | null;
}): Pick<StoreApp, 'rating_avg' | 'review_count' | 'rating_distribution'> {
  const count = stats.review_count ?? 0;
  return {
    rating_avg: count > 0 ? Math.round(((stats.rating_sum ?? 0) / count) * 100) / 100 : null,
    review_count: count,
    rating_distribution: {
      '1': stats.rating_1 ?? 0,
      '2': stats.rating_2 ?? 0,
      '3': stats.rating_3 ?? 0,
      '4': stats.rating_4 ?? 0,
      '5': stats.rating_5 ?? 0,
    },
  };
}

function presentStoreApp(ctx: AppContext, row: PublishedRow, lang: Lang, installed: boolean): StoreApp {
  const spanish = row.description_es.trim();
  const media = mediaSet(ctx, row.id, {
    icon: row.icon,
    screenshots: jsonArray<string>(row.screenshots),
  });
  const served: Lang = lang === 'es' && spanish ? 'es' : 'en';
  const justifications = jsonArray<ScopeJustification>(row.scope_justifications);
  return {
    id: row.id,
    name: row.name,
    tagline: row.tagline,
    description: served === 'es' ? row.description_es : row.description_en,
    lang: served,
    category: row.category,
    category_label: categoryLabel(row.category, served),
    app_url: row.app_url,
    homepage_url: row.homepage_url,
    privacy_url: row.privacy_url,
    support_url: row.support_url,
    scopes: jsonArray<Scope>(row.scopes).map((scope) => ({
      scope,
      description: SCOPE_DESCRIPTIONS[scope] ?? scope,
      justification: justifications.find((j) => j.scope === scope)?.justification ?? '',
    })),
    installed,
    published_at: row.published_at.toISOString(),
    icon_url: media.icon?.url ?? null,
    screenshots: media.screenshots,
    ...ratingOf(row),
    installs: installBucket(row.install_count ?? 0),
  };
}

/** `%` and `_` typed by a person are letters, not wildcards. */
function nameContains(q: string) {
  const pattern = `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return (eb: ExpressionBuilder<Database, 'apps' | 'store_listings'>) =>
    eb(sql`lower(${sql.ref('apps.name')})`, 'like', pattern.toLowerCase());
}

const OFFSET_CURSOR = /^o([0-9]{1,7})$/;

/** The sorts other than newest page by position: the cursor is `o<offset>`. */
function offsetOf(cursor: string | undefined): number {
  if (cursor === undefined || cursor === '') return 0;
  const match = OFFSET_CURSOR.exec(cursor);
  if (!match) {
    throw new AppError('validation.failed', 'The cursor is not valid', {
      errors: [{ path: 'querystring:/cursor', message: 'not a cursor of this list' }],
    });
  }
  return Number(match[1]);
}

/**
 * GET /v1/store/apps: published listings by category and full text (in the asked language, or the
 * name's letters), sorted by relevance (when searching), rating, installs or newest.
 */
export async function listStoreApps(
  ctx: AppContext,
  userId: string,
  query: StoreQuery,
): Promise<Page<StoreApp>> {
  const lang = query.lang ?? 'en';
  let select = publishedApps(ctx);
  if (query.category) select = select.where('store_listings.category', '=', query.category);
  const q = query.q?.trim();
  const document = sql.ref(`store_listings.search_${lang}`);
  const tsquery = q ? searchQuery(lang, q) : null;
  if (q && tsquery) {
    select = select.where((eb) =>
      eb.or([
        // The matches come from the GIN index once (a hashed subquery); the name's letters are
        // tested on the apps' names alone, never by reading every listing's document.
        eb(
          'store_listings.app_id',
          'in',
          eb
            .selectFrom('store_listings as matched')
            .select('matched.app_id')
            .where(sql<boolean>`${sql.ref(`matched.search_${lang}`)} @@ ${tsquery}`),
        ),
        nameContains(q)(eb),
      ]),
    );
  }
  const sort = query.sort ?? (q ? 'relevance' : 'newest');
  let page: Page<PublishedRow>;
  if (sort === 'newest' || (sort === 'relevance' && !tsquery)) {
    page = await newestFirst(select, 'apps', query, (row) => row);
  } else {
    const limit = pageLimit(query.limit);
    const offset = offsetOf(query.cursor);
    let ordered = select;
    if (sort === 'relevance' && tsquery) {
      ordered = ordered.orderBy(sql`ts_rank(${document}, ${tsquery})`, 'desc');
    } else if (sort === 'rating') {
      // Every published app has its stats row (publication makes it): the index's order.
      ordered = ordered.orderBy('stats.rating_avg', 'desc').orderBy('stats.review_count', 'desc');
    } else {
      ordered = ordered.orderBy('stats.install_count', 'desc');
    }
    const rows = await ordered
      .orderBy('apps.created_at', 'desc')
      .orderBy('apps.id', 'desc')
      .limit(limit + 1)
      .offset(offset)
      .execute();
    page = {
      data: rows.slice(0, limit),
      next_cursor: rows.length > limit ? `o${offset + limit}` : null,
    };
  }
  const installed = await installedAppIds(
    ctx,
    userId,
    query.tenant_id,
    page.data.map((row) => row.id),
  );
  return {
    data: page.data.map((row) => presentStoreApp(ctx, row, lang, installed.has(row.id))),
    next_cursor: page.next_cursor,
  };
}

export async function getStoreApp(
  ctx: AppContext,
  userId: string,
  appId: string,
  query: { lang?: Lang; tenant_id?: string },
): Promise<StoreApp> {
  const row = await publishedApps(ctx).where('apps.id', '=', appId).executeTakeFirst();
  if (!row) throw new AppError('app.not_found');
  const installed = await installedAppIds(ctx, userId, query.tenant_id, [row.id]);
  return presentStoreApp(ctx, row, query.lang ?? 'en', installed.has(row.id));
}

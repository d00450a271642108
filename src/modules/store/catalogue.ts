import { type ExpressionBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { membershipOf, membershipsOfPerson } from '../accounts/companies.ts';
import { isScope, SCOPE_DESCRIPTIONS, type Scope } from '../accounts/roles.ts';
import { jsonArray } from '../apps/registry.ts';
import { categoryLabel, type Lang } from './categories.ts';
import type { Listing, ScopeJustification } from './listing.ts';
import type { StoreListingsTable } from './tables.ts';

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
}

export interface StoreQuery extends PageRequest {
  lang?: Lang;
  category?: string;
  q?: string;
  tenant_id?: string;
}

function toListing(row: StoreListingsTable): Listing {
  return {
    tagline: row.tagline,
    description_en: row.description_en,
    description_es: row.description_es,
    category: row.category,
    app_url: row.app_url,
    scope_justifications: jsonArray<ScopeJustification>(row.scope_justifications),
  };
}

/** The app's store listing as last approved, or null before any approval. */
export async function listingOf(ctx: AppContext, appId: string): Promise<Listing | null> {
  const row = await ctx.db
    .selectFrom('store_listings')
    .selectAll()
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return row ? toListing(row) : null;
}

/**
 * The justification of each scope, shown beside it on the consent page, while the app is published
 * (null otherwise: a private app has no reviewed listing to show).
 */
export async function publishedJustifications(
  ctx: AppContext,
  appId: string,
): Promise<Partial<Record<Scope, string>> | null> {
  const row = await ctx.db
    .selectFrom('store_listings')
    .innerJoin('apps', 'apps.id', 'store_listings.app_id')
    .select('store_listings.scope_justifications')
    .where('store_listings.app_id', '=', appId)
    .where('apps.status', '=', 'published')
    .executeTakeFirst();
  if (!row) return null;
  const justifications: Partial<Record<Scope, string>> = {};
  for (const entry of jsonArray<ScopeJustification>(row.scope_justifications)) {
    if (isScope(entry.scope)) justifications[entry.scope] = entry.justification;
  }
  return justifications;
}

/** Where the install link sends people: the listing's app_url, which starts the OAuth flow. */
export async function listingAppUrl(ctx: AppContext, appId: string): Promise<string | null> {
  const row = await ctx.db
    .selectFrom('store_listings')
    .select('app_url')
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return row?.app_url ?? null;
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
    .select([
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

function presentStoreApp(row: PublishedRow, lang: Lang, installed: boolean): StoreApp {
  const spanish = row.description_es.trim();
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
  };
}

/** `%` and `_` typed by a person are letters, not wildcards. */
function nameContains(q: string) {
  const pattern = `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return (eb: ExpressionBuilder<Database, 'apps' | 'store_listings'>) =>
    eb(sql`lower(${sql.ref('apps.name')})`, 'like', pattern.toLowerCase());
}

/** GET /v1/store/apps: published listings, newest app first, by category and name. */
export async function listStoreApps(
  ctx: AppContext,
  userId: string,
  query: StoreQuery,
): Promise<Page<StoreApp>> {
  const lang = query.lang ?? 'en';
  let select = publishedApps(ctx);
  if (query.category) select = select.where('store_listings.category', '=', query.category);
  const q = query.q?.trim();
  if (q) select = select.where(nameContains(q));
  const page = await newestFirst(select, 'apps', query, (row) => row);
  const installed = await installedAppIds(
    ctx,
    userId,
    query.tenant_id,
    page.data.map((row) => row.id),
  );
  return {
    data: page.data.map((row) => presentStoreApp(row, lang, installed.has(row.id))),
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
  return presentStoreApp(row, query.lang ?? 'en', installed.has(row.id));
}

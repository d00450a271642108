import type { AppContext } from '../../../context.ts';
import { isScope, type Scope } from '../../accounts/roles.ts';
import { jsonArray } from '../../apps/registry.ts';
import type { Listing, ScopeJustification } from '../listing/rules.ts';
import { type MediaNames, NO_MEDIA } from '../media/images.ts';
import type { StoreListingsTable } from '../tables.ts';

// The published listing, row by row: what the consent page, the install link and the review
// console read of it.

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

/** The names of the published listing's icon and screenshots (none before the first approval). */
export async function publishedMediaNames(ctx: AppContext, appId: string): Promise<MediaNames> {
  const row = await ctx.db
    .selectFrom('store_listings')
    .select(['icon', 'screenshots'])
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return row ? { icon: row.icon, screenshots: jsonArray<string>(row.screenshots) } : NO_MEDIA;
}

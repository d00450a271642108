/**
 * The store's one door: other modules import from here only. The database's table types are the
 * exception (db/schema.ts reads tables.ts), so that no store type feeds back into the schema.
 */
export { listingAppUrl, publishedJustifications } from './catalogue/listings.ts';
export { seedDemoStore } from './demo/seed.ts';
export { searchDocument, searchQuery } from './listing/search.ts';
export { storeModule } from './plugin.ts';
export type { StoreTables } from './tables.ts';

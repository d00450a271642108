import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { runStatements } from './sql.ts';

/**
 * Store trust (issue 33). `listing_media`: icons and screenshots as re-encoded bytes, in the
 * database so that every API process serves them, named by their content hash. The developer's
 * next set (`listing_media_drafts`) travels with a submission (`app_submissions.media`) and becomes
 * the store's (`store_listings.icon`, `.screenshots`) on approval. `app_reviews`: one per company
 * and app. `app_store_stats`: the rating distribution, kept exact in the review writes' own
 * transactions, and the installation count, kept by a trigger, so that the store sorts 5,000 apps
 * without counting. `search_en` / `search_es`: the listing's text search documents (GIN).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE listing_media (
      app_id text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      name text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('icon', 'screenshot')),
      content_type text NOT NULL,
      width int NOT NULL,
      height int NOT NULL,
      byte_size int NOT NULL,
      content bytea NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (app_id, name)
    )`,
    `CREATE TABLE listing_media_drafts (
      app_id text PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
      icon text,
      screenshots jsonb NOT NULL DEFAULT '[]',
      updated_at timestamptz NOT NULL
    )`,
    `ALTER TABLE app_submissions ADD COLUMN media jsonb NOT NULL DEFAULT '{"icon": null, "screenshots": []}'`,
    `ALTER TABLE store_listings ADD COLUMN icon text,
      ADD COLUMN screenshots jsonb NOT NULL DEFAULT '[]',
      ADD COLUMN search_en tsvector NOT NULL DEFAULT ''::tsvector,
      ADD COLUMN search_es tsvector NOT NULL DEFAULT ''::tsvector`,
    'CREATE INDEX store_listings_search_en ON store_listings USING gin (search_en)',
    'CREATE INDEX store_listings_search_es ON store_listings USING gin (search_es)',
    // The store's default order: the newest published apps, read from the index with a limit.
    `CREATE INDEX apps_published_newest ON apps (created_at DESC, id DESC) WHERE status = 'published'`,
    `CREATE TABLE app_reviews (
      id text PRIMARY KEY,
      app_id text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      tenant_id text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
      author_id text REFERENCES users (id) ON DELETE SET NULL,
      rating smallint NOT NULL CHECK (rating BETWEEN 1 AND 5),
      body text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      reply_body text,
      reply_author_id text REFERENCES users (id) ON DELETE SET NULL,
      replied_at timestamptz,
      reply_updated_at timestamptz,
      hidden_at timestamptz,
      hidden_reason text,
      hidden_by text REFERENCES users (id) ON DELETE SET NULL,
      UNIQUE (app_id, tenant_id)
    )`,
    'CREATE INDEX app_reviews_app ON app_reviews (app_id, created_at DESC, id DESC)',
    'CREATE INDEX app_reviews_author ON app_reviews (author_id)',
    `CREATE TABLE app_store_stats (
      app_id text PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
      install_count int NOT NULL DEFAULT 0,
      review_count int NOT NULL DEFAULT 0,
      rating_sum int NOT NULL DEFAULT 0,
      rating_1 int NOT NULL DEFAULT 0,
      rating_2 int NOT NULL DEFAULT 0,
      rating_3 int NOT NULL DEFAULT 0,
      rating_4 int NOT NULL DEFAULT 0,
      rating_5 int NOT NULL DEFAULT 0,
      rating_avg double precision NOT NULL DEFAULT 0
    )`,
    // The store's sorts by rating and by installations, read in order with a limit.
    'CREATE INDEX app_store_stats_rating ON app_store_stats (rating_avg DESC, review_count DESC)',
    'CREATE INDEX app_store_stats_installs ON app_store_stats (install_count DESC)',
    `INSERT INTO app_store_stats (app_id, install_count)
      SELECT apps.id, (SELECT count(*) FROM installations i WHERE i.app_id = apps.id) FROM apps`,
    `CREATE FUNCTION store_count_installations() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO app_store_stats (app_id, install_count) VALUES (NEW.app_id, 1)
            ON CONFLICT (app_id) DO UPDATE SET install_count = app_store_stats.install_count + 1;
          RETURN NEW;
        END IF;
        UPDATE app_store_stats SET install_count = greatest(install_count - 1, 0) WHERE app_id = OLD.app_id;
        RETURN OLD;
      END $$`,
    `CREATE TRIGGER installations_store_count AFTER INSERT OR DELETE ON installations
      FOR EACH ROW EXECUTE FUNCTION store_count_installations()`,
  ]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TRIGGER installations_store_count ON installations',
    'DROP FUNCTION store_count_installations()',
    'DROP TABLE app_store_stats',
    'DROP INDEX apps_published_newest',
    'DROP TABLE app_reviews',
    `ALTER TABLE store_listings DROP COLUMN icon, DROP COLUMN screenshots, DROP COLUMN search_en,
      DROP COLUMN search_es`,
    'ALTER TABLE app_submissions DROP COLUMN media',
    'DROP TABLE listing_media_drafts',
    'DROP TABLE listing_media',
  ]);
}

import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Apps as code (issue 32, item 1): an app's configuration is a numbered, immutable manifest. One
 * version per app is `active`, and the app's fields are its values. Every app that exists gets a
 * first version made from its current fields, active from the moment of the migration.
 * A submission may name the version it puts forward for review (`version_id`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE app_versions (
      id text PRIMARY KEY,
      app_id text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      number integer NOT NULL CHECK (number > 0),
      status text NOT NULL CHECK (status IN ('draft', 'active', 'superseded')),
      manifest jsonb NOT NULL,
      changes jsonb NOT NULL,
      message text,
      created_by text,
      created_at timestamptz NOT NULL,
      released_at timestamptz,
      UNIQUE (app_id, number)
    )`,
    // One active version per app, also when two releases race.
    `CREATE UNIQUE INDEX app_versions_active ON app_versions (app_id) WHERE status = 'active'`,
    `INSERT INTO app_versions (id, app_id, number, status, manifest, changes, message, created_by, created_at, released_at)
      SELECT
        'apv_' || waybill_id_time(clock_timestamp())
          || substr(translate(encode(uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 14),
        a.id, 1, 'active',
        jsonb_build_object(
          'name', a.name, 'description', a.description, 'homepage_url', a.homepage_url,
          'privacy_url', a.privacy_url, 'support_url', a.support_url, 'redirect_uris', a.redirect_uris,
          'scopes', a.scopes, 'optional_scopes', '[]'::jsonb, 'events_url', a.events_url,
          'subscriptions', '[]'::jsonb),
        '[]'::jsonb, 'Made from the app''s fields when versions arrived', a.developer_id, now(), now()
      FROM apps a`,
    'ALTER TABLE app_submissions ADD COLUMN version_id text REFERENCES app_versions (id) ON DELETE SET NULL',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE app_submissions DROP COLUMN version_id', 'DROP TABLE app_versions']);
}

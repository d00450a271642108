import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * The developer console (issue 26). `installation_records`: every installation an app ever had,
 * kept when it is uninstalled (the installation row itself goes, with its tokens and endpoints), so
 * that installs and uninstalls can be counted and the developer reads the company's reason.
 * `app_usage`: counts per app and UTC hour of what the app did (API requests by status class and
 * error code, tokens issued, refreshed and refused), added in batches from each process's memory.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE installation_records (
      id text PRIMARY KEY,
      app_id text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      tenant_id text NOT NULL,
      customer_account_id text,
      scopes jsonb NOT NULL,
      installed_at timestamptz NOT NULL,
      uninstalled_at timestamptz,
      uninstall_reason text
    )`,
    'CREATE INDEX installation_records_app ON installation_records (app_id, installed_at DESC, id DESC)',
    `INSERT INTO installation_records (id, app_id, tenant_id, customer_account_id, scopes, installed_at)
      SELECT id, app_id, tenant_id, customer_account_id, scopes, created_at FROM installations`,
    `CREATE TABLE app_usage (
      app_id text NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
      hour timestamptz NOT NULL,
      metric text NOT NULL,
      detail text NOT NULL DEFAULT '',
      count bigint NOT NULL,
      PRIMARY KEY (app_id, hour, metric, detail)
    )`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP TABLE app_usage', 'DROP TABLE installation_records']);
}

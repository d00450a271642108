import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { runStatements } from './sql.ts';

/**
 * A schema Citus takes whole (issue 42, decision 0071), except the delivery tables (0080):
 * - the company tables (distributed by `tenant_id`) carry `tenant_id` in their primary key, last
 *   so that every `WHERE id = $1` stays an index probe, and in their unique keys;
 * - no foreign key from a global (reference) table into a company table: tokens and codes lose
 *   theirs into `installations`, API keys and memberships theirs into `customer_accounts`; the
 *   code that removes an installation removes its codes and tokens;
 * - foreign keys between company tables name the tenant on both sides;
 * - no trigger: the store's install count is kept by the statements that add and remove
 *   installations (apps/registry.ts).
 * Tokens and codes learn their installation's tenant, so the installation behind one is found in
 * one shard. Audit events without a company (a reviewer's moderation) get PLATFORM_TENANT.
 * The delivery tables' foreign keys into `installations` and `customer_accounts` go here (their
 * target keys change) and come back in composite form in 0080.
 */

/** The company tables whose `id` gains the tenant. */
const KEYED = [
  'customer_accounts',
  'shipments',
  'events',
  'installations',
  'installation_records',
  'privacy_requests',
  'audit_events',
  'app_reviews',
];

/** Mirrors accounts/tables.ts PLATFORM_TENANT (a migration does not import module code). */
const PLATFORM_TENANT = 'platform';

function addTenant(table: string, from: string, on: string): string[] {
  return [
    `ALTER TABLE ${table} ADD COLUMN tenant_id text`,
    `UPDATE ${table} t SET tenant_id = f.tenant_id FROM ${from} f WHERE ${on}`,
    `ALTER TABLE ${table} ALTER COLUMN tenant_id SET NOT NULL`,
  ];
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TRIGGER installations_store_count ON installations',
    'DROP FUNCTION store_count_installations()',
    'ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_customer_account_id_fkey',
    'ALTER TABLE memberships DROP CONSTRAINT memberships_customer_account_id_fkey',
    'ALTER TABLE oauth_codes DROP CONSTRAINT oauth_codes_installation_id_fkey',
    'ALTER TABLE oauth_tokens DROP CONSTRAINT oauth_tokens_installation_id_fkey',
    'ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_installation_fk',
    'ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_customer_account_id_fkey',
    'ALTER TABLE installations DROP CONSTRAINT installations_customer_account_id_fkey',
    'ALTER TABLE shipments DROP CONSTRAINT shipments_customer_account_id_fkey',
    'ALTER TABLE privacy_request_messages DROP CONSTRAINT privacy_request_messages_privacy_request_id_fkey',
    ...addTenant('oauth_codes', 'installations', 'f.id = t.installation_id'),
    ...addTenant('oauth_tokens', 'installations', 'f.id = t.installation_id'),
    ...addTenant('privacy_request_messages', 'privacy_requests', 'f.id = t.privacy_request_id'),
    `UPDATE audit_events SET tenant_id = '${PLATFORM_TENANT}' WHERE tenant_id IS NULL`,
    'ALTER TABLE audit_events ALTER COLUMN tenant_id SET NOT NULL',
    ...KEYED.map(
      (table) =>
        `ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD CONSTRAINT ${table}_pkey PRIMARY KEY (id, tenant_id)`,
    ),
    `ALTER TABLE privacy_request_messages DROP CONSTRAINT privacy_request_messages_pkey,
      ADD CONSTRAINT privacy_request_messages_pkey PRIMARY KEY (privacy_request_id, delivery_id, tenant_id)`,
    // Tracking numbers are 14 random characters: unique in practice everywhere, looked up per company.
    `ALTER TABLE shipments DROP CONSTRAINT shipments_tracking_number_key,
      ADD CONSTRAINT shipments_tracking_number_key UNIQUE (tracking_number, tenant_id)`,
    `ALTER TABLE installations ADD CONSTRAINT installations_customer_account_fk
      FOREIGN KEY (customer_account_id, tenant_id) REFERENCES customer_accounts (id, tenant_id) ON DELETE CASCADE`,
    // Was ON DELETE SET NULL: Citus refuses SET NULL on a key with the distribution column, even
    // SET NULL (customer_account_id) (citusdata/citus#7132). No code removes an account; code that
    // does will clear its shipments' account first.
    `ALTER TABLE shipments ADD CONSTRAINT shipments_customer_account_fk
      FOREIGN KEY (customer_account_id, tenant_id) REFERENCES customer_accounts (id, tenant_id)`,
    `ALTER TABLE privacy_request_messages ADD CONSTRAINT privacy_request_messages_request_fk
      FOREIGN KEY (privacy_request_id, tenant_id) REFERENCES privacy_requests (id, tenant_id) ON DELETE CASCADE`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE privacy_request_messages DROP CONSTRAINT privacy_request_messages_request_fk',
    'ALTER TABLE shipments DROP CONSTRAINT shipments_customer_account_fk',
    'ALTER TABLE installations DROP CONSTRAINT installations_customer_account_fk',
    `ALTER TABLE shipments DROP CONSTRAINT shipments_tracking_number_key,
      ADD CONSTRAINT shipments_tracking_number_key UNIQUE (tracking_number)`,
    `ALTER TABLE privacy_request_messages DROP CONSTRAINT privacy_request_messages_pkey,
      ADD CONSTRAINT privacy_request_messages_pkey PRIMARY KEY (privacy_request_id, delivery_id)`,
    ...KEYED.map(
      (table) =>
        `ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD CONSTRAINT ${table}_pkey PRIMARY KEY (id)`,
    ),
    'ALTER TABLE audit_events ALTER COLUMN tenant_id DROP NOT NULL',
    `UPDATE audit_events SET tenant_id = NULL WHERE tenant_id = '${PLATFORM_TENANT}'`,
    'ALTER TABLE privacy_request_messages DROP COLUMN tenant_id',
    'ALTER TABLE oauth_tokens DROP COLUMN tenant_id',
    'ALTER TABLE oauth_codes DROP COLUMN tenant_id',
    // A row whose parent went while the keys were away goes as the cascade would have taken it.
    'DELETE FROM oauth_codes c WHERE NOT EXISTS (SELECT 1 FROM installations i WHERE i.id = c.installation_id)',
    'DELETE FROM oauth_tokens t WHERE NOT EXISTS (SELECT 1 FROM installations i WHERE i.id = t.installation_id)',
    `DELETE FROM webhook_endpoints e WHERE e.installation_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM installations i WHERE i.id = e.installation_id)`,
    ...['webhook_endpoints', 'memberships', 'api_tokens'].map(
      (table) => `DELETE FROM ${table} t WHERE t.customer_account_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM customer_accounts a WHERE a.id = t.customer_account_id)`,
    ),
    `ALTER TABLE privacy_request_messages ADD CONSTRAINT privacy_request_messages_privacy_request_id_fkey
      FOREIGN KEY (privacy_request_id) REFERENCES privacy_requests (id) ON DELETE CASCADE`,
    `ALTER TABLE shipments ADD CONSTRAINT shipments_customer_account_id_fkey
      FOREIGN KEY (customer_account_id) REFERENCES customer_accounts (id) ON DELETE SET NULL`,
    `ALTER TABLE installations ADD CONSTRAINT installations_customer_account_id_fkey
      FOREIGN KEY (customer_account_id) REFERENCES customer_accounts (id) ON DELETE CASCADE`,
    `ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_customer_account_id_fkey
      FOREIGN KEY (customer_account_id) REFERENCES customer_accounts (id) ON DELETE CASCADE`,
    `ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_installation_fk
      FOREIGN KEY (installation_id) REFERENCES installations (id) ON DELETE CASCADE`,
    `ALTER TABLE oauth_tokens ADD CONSTRAINT oauth_tokens_installation_id_fkey
      FOREIGN KEY (installation_id) REFERENCES installations (id) ON DELETE CASCADE`,
    `ALTER TABLE oauth_codes ADD CONSTRAINT oauth_codes_installation_id_fkey
      FOREIGN KEY (installation_id) REFERENCES installations (id) ON DELETE CASCADE`,
    `ALTER TABLE memberships ADD CONSTRAINT memberships_customer_account_id_fkey
      FOREIGN KEY (customer_account_id) REFERENCES customer_accounts (id) ON DELETE CASCADE`,
    `ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_customer_account_id_fkey
      FOREIGN KEY (customer_account_id) REFERENCES customer_accounts (id) ON DELETE CASCADE`,
    `CREATE FUNCTION store_count_installations() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          IF NEW.resource = 'v1' THEN
            INSERT INTO app_store_stats (app_id, install_count) VALUES (NEW.app_id, 1)
              ON CONFLICT (app_id) DO UPDATE SET install_count = app_store_stats.install_count + 1;
          END IF;
          RETURN NEW;
        END IF;
        IF OLD.resource = 'v1' THEN
          UPDATE app_store_stats SET install_count = greatest(install_count - 1, 0) WHERE app_id = OLD.app_id;
        END IF;
        RETURN OLD;
      END $$`,
    `CREATE TRIGGER installations_store_count AFTER INSERT OR DELETE ON installations
      FOR EACH ROW EXECUTE FUNCTION store_count_installations()`,
  ]);
  await setSearchPath(db, true);
}

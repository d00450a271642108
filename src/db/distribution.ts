/**
 * How each table is laid out on a Citus cluster (decision 0073). A company's data is distributed
 * by its tenant_id, every such table co-located with the others, so that a request about one
 * company runs on one node and joins and foreign keys stay local; the global, small tables are
 * reference tables, copied whole to every node. Every table of the schema is in exactly one of the
 * two lists (test/db/distribution.test.ts checks it against the catalog on every engine), and the
 * distribution step (distribute.ts) applies them after the migrations.
 */

/** The column every distributed table is sharded by. */
export const DISTRIBUTION_COLUMN = 'tenant_id';

/**
 * Company data, distributed by tenant_id and co-located with the first of the list. A partitioned
 * table (webhook_attempts, by time) is distributed whole: its partitions follow it.
 */
export const DISTRIBUTED_TABLES = [
  'customer_accounts',
  'shipments',
  'events',
  'inbound_sources',
  'inbound_messages',
  'installations',
  'installation_records',
  'privacy_requests',
  'privacy_request_messages',
  'audit_events',
  'app_reviews',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'webhook_rate_state',
  'shipment_checkpoints',
  'shipment_simulations',
  'tracking_tokens',
  'recipient_settings',
  'company_logos',
  'recipient_notifications',
  'recipient_unsubscribes',
] as const;

/** Global tables, small: copied to every node. */
export const REFERENCE_TABLES = [
  'companies',
  'users',
  'memberships',
  'api_tokens',
  'sessions',
  'oauth_codes',
  'oauth_tokens',
  'email_verifications',
  'apps',
  'agent_clients',
  'app_versions',
  'app_submissions',
  'app_store_stats',
  'app_usage',
  'store_listings',
  'listing_media',
  'listing_media_drafts',
  'idempotency_keys',
  'mail_outbox',
  'outbound_budget',
  'oauth_address_counts',
  'client_document_failures',
  'sign_in_delays',
  'sign_in_trust',
  'page_flashes',
  'kysely_migration',
  'kysely_migration_lock',
] as const;

/**
 * The delivery engine's per-company twins (decision 0074), made Citus distributed functions
 * routed by their first argument: a call runs on the node that holds that company's shards, its
 * statements there, so the coordinator only forwards one call per company (decision 0076). The
 * fan-out's twin is left out: it runs inside the API's transaction, where Citus delegates only
 * with `force_delegation`, and that refuses its INSERT ... SELECT (decision 0076).
 */
export const DELEGATED_FUNCTIONS = ['webhook_claim_tenant', 'webhook_record_attempts_tenant'] as const;

/** The table the delegated functions are co-located with. */
export const DELEGATED_WITH: DistributedTable = 'webhook_deliveries';

/** Tables a list may name that a schema no longer has (a migration on its way removes them). */
export const TABLES_BEING_REMOVED: readonly string[] = [];

export type DistributedTable = (typeof DISTRIBUTED_TABLES)[number];
export type ReferenceTable = (typeof REFERENCE_TABLES)[number];
export type Placement = 'distributed' | 'reference';

const placements = new Map<string, Placement>([
  ...DISTRIBUTED_TABLES.map((table) => [table, 'distributed'] as const),
  ...REFERENCE_TABLES.map((table) => [table, 'reference'] as const),
]);

/** Where a table goes, or null for a table in neither list (an error wherever it is found). */
export function placementOf(table: string): Placement | null {
  return placements.get(table) ?? null;
}

/** Every installation an app had, kept after an uninstall (migration 0036). */
export interface InstallationRecordsTable {
  /** The installation's id. */
  id: string;
  app_id: string;
  tenant_id: string;
  customer_account_id: string | null;
  /** The scopes of the latest approval (jsonb array). */
  scopes: unknown;
  installed_at: Date;
  uninstalled_at: Date | null;
  /** The company's reason, for the developer only. */
  uninstall_reason: string | null;
}

/** Counts per app and UTC hour, added in batches (usage.ts). */
export interface AppUsageTable {
  app_id: string;
  hour: Date;
  /** `api` (detail: status class), `api_error` (detail: problem code), `token` (detail: issued, refreshed, invalid_grant, invalid_grant_anonymous). */
  metric: string;
  detail: string;
  count: string | number | bigint;
}

export interface ConsoleTables {
  installation_records: InstallationRecordsTable;
  app_usage: AppUsageTable;
}

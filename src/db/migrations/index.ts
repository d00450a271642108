import type { Migration } from 'kysely/migration';
import * as accounts from './0001_accounts.ts';
import * as shipments from './0002_shipments.ts';
import * as webhooks from './0003_webhooks.ts';
import * as appsOAuth from './0004_apps_oauth.ts';

/** Ordered by name; the Migrator applies the ones not yet applied. */
export const migrations: Record<string, Migration> = {
  '0001_accounts': accounts,
  '0002_shipments': shipments,
  '0003_webhooks': webhooks,
  '0004_apps_oauth': appsOAuth,
};

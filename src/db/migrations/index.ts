import type { Migration } from 'kysely/migration';
import * as accounts from './0001_accounts.ts';
import * as shipments from './0002_shipments.ts';

/** Ordered by name; the Migrator applies the ones not yet applied. */
export const migrations: Record<string, Migration> = {
  '0001_accounts': accounts,
  '0002_shipments': shipments,
};

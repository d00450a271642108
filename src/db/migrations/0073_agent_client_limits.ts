import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Limits on what anyone may make Waybill do for agent clients (issue 39 item 5), kept in the
 * database so that every API process counts the same:
 * - `oauth_address_counts`: how many registrations, and how many metadata document fetches, one
 *   address key (an IPv6 /64 as one address) made in a fixed window; counted by an upsert, so
 *   concurrent requests never both take the last place.
 * - `client_document_failures`: a metadata document URL that could not be used, and why, for a
 *   minute, so that asking for it again does not fetch it again.
 * Neither holds company data (no tenant_id).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE oauth_address_counts (
      subject text NOT NULL,
      window_start timestamptz NOT NULL,
      count integer NOT NULL,
      PRIMARY KEY (subject, window_start)
    )`,
    `CREATE TABLE client_document_failures (
      client_id text PRIMARY KEY,
      reason text NOT NULL,
      until timestamptz NOT NULL
    )`,
    'DROP INDEX agent_clients_registered_from',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'CREATE INDEX agent_clients_registered_from ON agent_clients (registered_from, created_at) WHERE registered_from IS NOT NULL',
    'DROP TABLE client_document_failures',
    'DROP TABLE oauth_address_counts',
  ]);
}

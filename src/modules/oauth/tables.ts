import type { Generated } from 'kysely';

export interface AppsTable {
  id: string;
  developer_id: string | null;
  name: string;
  description: string;
  homepage_url: string | null;
  privacy_url: string | null;
  support_url: string | null;
  /** jsonb arrays; written with JSON.stringify. */
  redirect_uris: unknown;
  scopes: unknown;
  kind: 'confidential' | 'public';
  client_secret_hash: string | null;
  events_url: string | null;
  events_secret_sealed: string;
  events_previous_secret_sealed: string | null;
  events_previous_secret_expires_at: Date | null;
  /** The event version of the app's events URL (migration 0096): 2026-11-01 for apps registered before it. */
  events_api_version?: string;
  status: 'private' | 'published' | 'delisted' | 'suspended';
  created_at: Date;
  updated_at: Date;
}

export interface InstallationsTable {
  id: string;
  app_id: string;
  tenant_id: string;
  customer_account_id: string | null;
  /** The person who approved last; app tokens act as them. */
  user_id: string;
  scopes: unknown;
  /** When the latest approval happened; earlier tokens and codes ended then. */
  approved_at: Date;
  /** False for an agent connection approved for test data (its tokens are atk_test_). */
  livemode: Generated<boolean>;
  /**
   * The one resource this grant is for (migration 0067): `v1`, an app's installation, or `mcp`, an
   * agent connection. An app approved for both has a row for each.
   */
  resource: Generated<'v1' | 'mcp'>;
  /** The last call an agent connection made (at most once a minute). */
  last_used_at: Generated<Date | null>;
  /** jsonb: event types the app muted for this installation (issue 32; migration 0062). */
  muted_event_types?: unknown;
  created_at: Date;
  updated_at: Date;
}

export interface OAuthCodesTable {
  code_hash: string;
  app_id: string;
  installation_id: string;
  /** The installation's company: its shard on Citus (decision 0071). */
  tenant_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  scopes: unknown;
  /** RFC 8707: the one resource the grant is for. */
  resource: Generated<'v1' | 'mcp'>;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
}

export interface OAuthTokensTable {
  id: string;
  token_hash: string;
  kind: 'access' | 'refresh';
  app_id: string;
  installation_id: string;
  /** The installation's company: its shard on Citus (decision 0071). */
  tenant_id: string;
  user_id: string;
  scopes: unknown;
  resource: Generated<'v1' | 'mcp'>;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
  /**
   * An agent client's spent refresh token: the pair its use minted, sealed, for the refresh grace
   * (migration 0068); dropped after it.
   */
  reissue_sealed: Generated<string | null>;
}

/** The view of migration 0033: what each installation's grant lets it receive now. */
export interface InstallationGrantsView {
  installation_id: string;
  app_id: string;
  tenant_id: string;
  customer_account_id: string | null;
  approved_by: string;
  /** Why the installation receives nothing, or null while its grant is in force. */
  held_reason: 'app_suspended' | 'needs_approval' | null;
  /** The granted scopes the approver's role holds now. */
  scopes: string[];
}

/** Agent clients (issue 31): apps without a developer, known from a metadata document or a registration. */
export interface AgentClientsTable {
  app_id: string;
  source: 'metadata_document' | 'registration';
  /** The client's metadata, as fetched or registered. */
  metadata: unknown;
  /** Until when a fetched metadata document holds (its Cache-Control, 30 s to 24 h). */
  metadata_expires_at: Date | null;
  /** The address key a registration came from (an IPv6 /64 as one address). */
  registered_from: string | null;
  /** The first time a person approved the client; a registration never approved is removed after 24 h. */
  first_approved_at: Date | null;
  created_at: Date;
}

/** Requests counted per address key in a fixed window (registrations, metadata document fetches). */
export interface OAuthAddressCountsTable {
  /** `<what>:<address key>`, e.g. `registration:2001:db8:0:1::/64`. */
  subject: string;
  window_start: Date;
  count: number;
}

/** A metadata document that could not be used, and why, for a minute (never fetched again before). */
export interface ClientDocumentFailuresTable {
  client_id: string;
  reason: string;
  until: Date;
}

export interface OAuthTables {
  agent_clients: AgentClientsTable;
  client_document_failures: ClientDocumentFailuresTable;
  oauth_address_counts: OAuthAddressCountsTable;
  apps: AppsTable;
  installations: InstallationsTable;
  installation_grants: InstallationGrantsView;
  oauth_codes: OAuthCodesTable;
  oauth_tokens: OAuthTokensTable;
}

import type { Generated } from 'kysely';

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  /** The reviewer the demo seeded: a reviewer while the demo is on (users.ts isReviewer). */
  demo_reviewer: boolean;
  /** When the person opened a verification link sent to `email` (email-verification.ts); null until then. */
  email_verified_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

export interface CompaniesTable {
  id: string;
  name: string;
  live: boolean;
  /** Which modes agents may use (issue 31): jsonb `{test, live}`. */
  agent_access: unknown;
  /** Hours a shipment not final may go without a checkpoint or move before shipment.stalled (migration 0086). */
  stall_after_hours: Generated<number>;
  created_at: Date;
  updated_at: Date;
}

export interface CustomerAccountsTable {
  id: string;
  tenant_id: string;
  name: string;
  created_at: Date;
}

export interface MembershipsTable {
  id: string;
  tenant_id: string;
  user_id: string;
  role: string;
  customer_account_id: string | null;
  created_at: Date;
}

export interface ApiTokensTable {
  id: string;
  tenant_id: string;
  name: string;
  token_hash: string;
  token_hint: string;
  mode: 'live' | 'test';
  /** Where the token works: the API (`v1`) or the MCP server (`mcp`), never both (migration 0084). */
  audience: Generated<'v1' | 'mcp'>;
  /** jsonb array of scope names; written with JSON.stringify. */
  scopes: string[] | string;
  customer_account_id: string | null;
  created_by: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export interface IdempotencyKeysTable {
  scope: string;
  key: string;
  request_hash: string;
  response_status: number | null;
  response_body: string | null;
  created_at: Date;
}

/**
 * The tenant of an audit event that belongs to no company (a reviewer's moderation): audit events
 * are company rows, keyed and sharded by tenant (decision 0071). Company ids are `cmp_...`.
 */
export const PLATFORM_TENANT = 'platform';

export interface AuditEventsTable {
  id: string;
  /** A company, or PLATFORM_TENANT. */
  tenant_id: string;
  actor: string;
  action: string;
  details: unknown;
  created_at: Date;
}

/** A verification link sent to a person's address: single use, 24 hours (email-verification.ts). */
export interface EmailVerificationsTable {
  id: string;
  user_id: string;
  /** The address the link was sent to: it verifies that address only. */
  email: string;
  token_hash: string;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
}

/** The growing delay of failed sign-ins, per account and per trusted source (sign-in-throttle.ts). */
export interface SignInDelaysTable {
  /** HMAC of the normalised e-mail, with the trusted source's key when the attempt came from one. */
  throttle_key: string;
  failures: number;
  last_failure_at: Date;
  next_attempt_at: Date;
}

/** Sources (a browser's device cookie, an address) that signed in to an account successfully. */
export interface SignInTrustTable {
  account_key: string;
  source_key: string;
  last_success_at: Date;
}

export interface AccountsTables {
  users: UsersTable;
  sessions: SessionsTable;
  companies: CompaniesTable;
  customer_accounts: CustomerAccountsTable;
  memberships: MembershipsTable;
  api_tokens: ApiTokensTable;
  idempotency_keys: IdempotencyKeysTable;
  audit_events: AuditEventsTable;
  email_verifications: EmailVerificationsTable;
  sign_in_delays: SignInDelaysTable;
  sign_in_trust: SignInTrustTable;
}

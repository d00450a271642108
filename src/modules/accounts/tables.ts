export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  /** The reviewer the demo seeded: a reviewer while the demo is on (users.ts isReviewer). */
  demo_reviewer: boolean;
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

export interface AuditEventsTable {
  id: string;
  tenant_id: string | null;
  actor: string;
  action: string;
  details: unknown;
  created_at: Date;
}

export interface MailOutboxTable {
  id: string;
  recipients: string[] | string;
  subject: string;
  body: string;
  created_at: Date;
  sent_at: Date | null;
  error: string | null;
}

/** Failed sign-ins per account, across addresses and routes, in a fixed window (sign-in-throttle.ts). */
export interface SignInFailuresTable {
  /** HMAC of the normalised e-mail: e-mails that never signed up are not stored. */
  account_key: string;
  window_started_at: Date;
  failures: number;
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
  mail_outbox: MailOutboxTable;
  sign_in_failures: SignInFailuresTable;
}

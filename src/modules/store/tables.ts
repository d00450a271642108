export type SubmissionStatus =
  | 'submitted'
  | 'in_review'
  | 'approved'
  | 'rejected'
  | 'changes_requested'
  | 'withdrawn';

export interface AppSubmissionsTable {
  id: string;
  app_id: string;
  /** The developer who sent it. */
  submitted_by: string;
  status: SubmissionStatus;
  /** The app was published when this was sent: an update of what the store shows. */
  updates_published_app: boolean;
  /** jsonb: the listing as submitted. */
  listing: unknown;
  note: string | null;
  /** jsonb: name, description, links, redirect URIs and scopes as submitted (spec 2.8). */
  app_snapshot: unknown;
  events_url: string | null;
  /** jsonb: [{name, passed, detail}]. */
  checks: unknown;
  reviewer_id: string | null;
  reviewer_note: string | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  decided_at: Date | null;
  /** The app version put forward (issue 32); its approval releases it. */
  version_id: string | null;
}

export interface StoreListingsTable {
  app_id: string;
  submission_id: string;
  tagline: string;
  description_en: string;
  description_es: string;
  category: string;
  app_url: string;
  /** jsonb: [{scope, justification}]. */
  scope_justifications: unknown;
  published_at: Date;
  updated_at: Date;
}

export interface StoreTables {
  app_submissions: AppSubmissionsTable;
  store_listings: StoreListingsTable;
}

import type { Generated } from 'kysely';

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
  /** jsonb: {icon, screenshots} (listing_media names) as submitted. */
  media: unknown;
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
  /** listing_media names of the approved icon and screenshots (jsonb array). */
  icon: string | null;
  screenshots: unknown;
  search_en: unknown;
  search_es: unknown;
}

export interface ListingMediaTable {
  app_id: string;
  /** `icon-<sha256 prefix>.png`: the content hash makes each name immutable. */
  name: string;
  kind: 'icon' | 'screenshot';
  content_type: string;
  width: number;
  height: number;
  byte_size: number;
  content: Uint8Array;
  created_at: Date;
}

/** The developer's next set of media, which the next submission carries. */
export interface ListingMediaDraftsTable {
  app_id: string;
  icon: string | null;
  /** jsonb array of names. */
  screenshots: unknown;
  updated_at: Date;
}

export interface AppReviewsTable {
  id: string;
  app_id: string;
  tenant_id: string;
  author_id: string | null;
  rating: number;
  body: string;
  created_at: Date;
  updated_at: Date;
  reply_body: string | null;
  reply_author_id: string | null;
  replied_at: Date | null;
  reply_updated_at: Date | null;
  hidden_at: Date | null;
  hidden_reason: string | null;
  hidden_by: string | null;
}

export interface AppStoreStatsTable {
  app_id: string;
  install_count: Generated<number>;
  review_count: Generated<number>;
  rating_sum: Generated<number>;
  rating_1: Generated<number>;
  rating_2: Generated<number>;
  rating_3: Generated<number>;
  rating_4: Generated<number>;
  rating_5: Generated<number>;
  /** rating_sum / review_count (0 without reviews): the order of the sort by rating. */
  rating_avg: Generated<number>;
}

export interface StoreTables {
  app_submissions: AppSubmissionsTable;
  store_listings: StoreListingsTable;
  listing_media: ListingMediaTable;
  listing_media_drafts: ListingMediaDraftsTable;
  app_reviews: AppReviewsTable;
  app_store_stats: AppStoreStatsTable;
}

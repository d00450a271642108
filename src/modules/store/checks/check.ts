import type { MediaCheckItem } from '../media/service.ts';

export const CHECK_NAMES = [
  'events_url_rejects_bad_signature',
  'events_url_accepts_signed_test',
  'scope_justifications_complete',
  'listing_media_valid',
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/** One automated check (CONTRACT.md, submission fields). A failing check never rejects by itself. */
export interface Check {
  name: CheckName;
  passed: boolean;
  detail: CheckDetail;
}

export interface CheckDetail {
  /** One sentence for people. */
  summary: string;
  /** The message sent: URL, every header, the body as sent. */
  sent?: { url: string; headers: Record<string, string>; body: string };
  /** What came back: status, time taken, the first 4 KB of the answer, or why there was none. */
  received?: {
    status_code: number | null;
    duration_ms: number;
    body: string | null;
    error: string | null;
  };
  /** scope_justifications_complete: the requested scopes and those lacking a fitting justification. */
  scopes?: string[];
  missing?: { scope: string; problem: string }[];
  /** listing_media_valid: the images the submission carries, and what is wrong with the set. */
  media?: MediaCheckItem[];
  problems?: string[];
}

/** What the checks need of the app: its id (whose events secret signs) and the values under review. */
export interface CheckedApp {
  id: string;
  scopes: readonly string[];
  events_url: string | null;
}

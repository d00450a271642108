/** A one-time message of the dashboard (flash.ts), read once by the page a redirect lands on. */
export interface PageFlashesTable {
  /** Random, 32 bytes base64url; only the browser's flash cookie carries it. */
  id: string;
  kind: 'ok' | 'error';
  message: string;
  /** A secret shown once (a new API token, a signing secret), sealed with the secret key. */
  secret_sealed: string | null;
  secret_note: string | null;
  expires_at: Date;
}

export interface WebTables {
  page_flashes: PageFlashesTable;
}

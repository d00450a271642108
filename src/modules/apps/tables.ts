/** Apps as code (issue 32): an app's numbered manifests; one is active (migration 0060). */
export interface AppVersionsTable {
  id: string;
  app_id: string;
  number: number;
  status: 'draft' | 'active' | 'superseded';
  /** jsonb: the manifest, normalized (manifest.ts). */
  manifest: unknown;
  /** jsonb: [{path, from, to}] from the version active when this one was made. */
  changes: unknown;
  message: string | null;
  /** JSON array by subscription index: each broker destination sealed, null for HTTPS (migration 0078). */
  destinations_sealed: string | null;
  created_by: string | null;
  created_at: Date;
  released_at: Date | null;
}

export interface AppsTables {
  app_versions: AppVersionsTable;
}

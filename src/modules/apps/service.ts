import type { AppContext, Trx } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { newSigningSecret } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { hashSecret, newId, newSecret } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import type { Scope } from '../accounts/roles.ts';
import type { AppsTable } from '../oauth/tables.ts';
import { type ApiVersion, isApiVersion, LATEST_API_VERSION } from '../shipments/events.ts';
import {
  type AppFields,
  type AppPatch,
  assertEventsUrlAllowed,
  checkAppFields,
  checkFields,
  LINK_FIELDS,
} from './fields.ts';
import { jsonArray, ownedAppRow, toAppRecord } from './registry.ts';
import { activateVersion, recordFieldsAsVersion } from './versions.ts';

/** The app as the developer API shows it (CONTRACT.md, App fields). */
export interface App {
  id: string;
  client_id: string;
  name: string;
  description: string;
  homepage_url: string | null;
  privacy_url: string | null;
  support_url: string | null;
  redirect_uris: string[];
  scopes: Scope[];
  kind: 'confidential' | 'public';
  events_url: string | null;
  /** The event version of the messages to the events URL (decision 0081). */
  events_api_version: ApiVersion;
  status: AppsTable['status'];
  install_url: string;
  created_at: string;
  updated_at: string;
}

export type NewApp = AppFields & {
  kind: 'confidential' | 'public';
  events_url?: string | null;
  events_api_version?: ApiVersion;
};

/** The version an app's events URL is pinned to: 2026-11-01 for an app from before the column. */
export function eventsApiVersion(row: Pick<AppsTable, 'events_api_version'>): ApiVersion {
  return isApiVersion(row.events_api_version) ? row.events_api_version : '2026-11-01';
}

export function installUrl(ctx: AppContext, appId: string): string {
  return `${ctx.config.webUrl}/apps/${appId}/install`;
}

export function presentApp(ctx: AppContext, row: AppsTable): App {
  const { client_secret_hash: _hash, developer_id: _developer, ...record } = toAppRecord(row);
  return {
    ...record,
    client_id: row.id,
    events_url: row.events_url,
    events_api_version: eventsApiVersion(row),
    install_url: installUrl(ctx, row.id),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** Registers an app. The client secret (confidential apps) is returned here once and kept only as a hash. */
export async function createApp(
  ctx: AppContext,
  developerId: string,
  input: NewApp,
): Promise<App & { client_secret?: string; events_secret: string }> {
  const { scopes } = checkFields(ctx, input);
  await assertEventsUrlAllowed(ctx, input.events_url);
  const clientSecret = input.kind === 'confidential' ? newSecret('aps_') : null;
  const eventsSecret = newSigningSecret();
  const now = ctx.clock.now();
  const row: AppsTable = {
    id: newId('app'),
    developer_id: developerId,
    name: input.name.trim(),
    description: input.description.trim(),
    homepage_url: input.homepage_url || null,
    privacy_url: input.privacy_url || null,
    support_url: input.support_url || null,
    redirect_uris: JSON.stringify(input.redirect_uris),
    scopes: JSON.stringify(scopes),
    kind: input.kind,
    client_secret_hash: clientSecret ? hashSecret(clientSecret) : null,
    events_url: input.events_url || null,
    // A new app gets the latest version unless it asks (decision 0081).
    events_api_version: input.events_api_version ?? LATEST_API_VERSION,
    events_secret_sealed: ctx.secrets.seal(eventsSecret),
    events_previous_secret_sealed: null,
    events_previous_secret_expires_at: null,
    status: 'private',
    created_at: now,
    updated_at: now,
  };
  await ctx.db.transaction().execute(async (trx) => {
    await trx.insertInto('apps').values(row).execute();
    await recordFieldsAsVersion(ctx, trx, row.id, developerId, 'Registered');
  });
  const app = presentApp(ctx, { ...row, redirect_uris: input.redirect_uris, scopes });
  return { ...app, ...(clientSecret ? { client_secret: clientSecret } : {}), events_secret: eventsSecret };
}

export async function listApps(
  ctx: AppContext,
  developerId: string,
  page: PageRequest = {},
): Promise<Page<App>> {
  return newestFirst(
    ctx.db.selectFrom('apps').selectAll().where('developer_id', '=', developerId),
    'apps',
    page,
    (row) => presentApp(ctx, row),
  );
}

export async function getApp(ctx: AppContext, developerId: string, appId: string): Promise<App> {
  return presentApp(ctx, await ownedAppRow(ctx, developerId, appId));
}

/** The fields a person approves on the consent page: on a published app they change through review. */
const REVIEWED_FIELDS = [
  'name',
  'description',
  ...LINK_FIELDS,
  'redirect_uris',
  'scopes',
  'events_url',
] as const;

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** While published, a change to a reviewed field is refused (spec 3.2); the same value again is fine. */
export function refuseReviewedChanges(row: AppsTable, patch: AppPatch): void {
  if (row.status !== 'published') return;
  const current: Record<string, unknown> = {
    ...row,
    redirect_uris: jsonArray(row.redirect_uris),
    scopes: jsonArray(row.scopes),
  };
  const changed = REVIEWED_FIELDS.filter(
    (field) => patch[field] !== undefined && !same(patch[field], current[field]),
  );
  if (changed.length > 0) {
    throw new AppError(
      'app.published_requires_review',
      `Submit ${changed.join(', ')} as an update for review; the published app keeps what was approved`,
      { fields: changed },
    );
  }
}

/**
 * Checks a change as PATCH does and returns it normalized (trimmed texts, scopes in catalogue
 * order, a cleared link as null). App Store submissions check their proposed values with it too.
 */
export async function normalizeAppPatch(ctx: AppContext, patch: AppPatch): Promise<AppPatch> {
  const normalized = checkAppFields(ctx, patch);
  await assertEventsUrlAllowed(ctx, patch.events_url);
  return normalized;
}

export async function updateApp(
  ctx: AppContext,
  developerId: string,
  appId: string,
  patch: AppPatch & { events_api_version?: ApiVersion },
): Promise<App> {
  const normalized = await normalizeAppPatch(ctx, patch);
  return ctx.db.transaction().execute(async (trx) => {
    const row = await trx
      .selectFrom('apps')
      .selectAll()
      .where('id', '=', appId)
      .where('developer_id', '=', developerId)
      .forUpdate()
      .executeTakeFirst();
    if (!row) throw new AppError('app.not_found');
    refuseReviewedChanges(row, normalized);
    const { redirect_uris, scopes: newScopes, ...plain } = normalized;
    const updated = await trx
      .updateTable('apps')
      .set({
        ...plain,
        ...(redirect_uris ? { redirect_uris: JSON.stringify(redirect_uris) } : {}),
        ...(newScopes ? { scopes: JSON.stringify(newScopes) } : {}),
        // Not a reviewed field: what the app's own receiver accepts is the developer's to choose.
        ...(patch.events_api_version ? { events_api_version: patch.events_api_version } : {}),
        updated_at: ctx.clock.now(),
      })
      .where('id', '=', appId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordFieldsAsVersion(ctx, trx, appId, developerId, 'Changed field by field');
    return presentApp(ctx, updated);
  });
}

/** Every reviewed value of an app (spec 2.8): what a submission snapshots and approval publishes. */
export interface ReviewedValues {
  name: string;
  description: string;
  homepage_url: string | null;
  privacy_url: string | null;
  support_url: string | null;
  redirect_uris: string[];
  scopes: Scope[];
  events_url: string | null;
}

/**
 * Publication (spec 3.1, approved): the live app takes the reviewed values and the status, in the
 * reviewer's transaction. Installations keep the scopes they granted; only new approvals see new ones.
 */
export async function applyReviewedValues(
  ctx: AppContext,
  trx: Trx,
  appId: string,
  values: ReviewedValues & { status: 'published' },
  approved: { submissionId: string; versionId: string | null },
): Promise<void> {
  if (approved.versionId) {
    // The submission put a version forward: approval releases it, and the app takes its fields.
    await activateVersion(ctx, trx, appId, approved.versionId);
    await trx.updateTable('apps').set({ status: values.status }).where('id', '=', appId).execute();
    return;
  }
  const { redirect_uris, scopes, ...plain } = values;
  await trx
    .updateTable('apps')
    .set({
      ...plain,
      redirect_uris: JSON.stringify(redirect_uris),
      scopes: JSON.stringify(scopes),
      updated_at: ctx.clock.now(),
    })
    .where('id', '=', appId)
    .execute();
  await recordFieldsAsVersion(ctx, trx, appId, null, `Approved in review (${approved.submissionId})`);
}

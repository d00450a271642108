import type { AppContext, Trx } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { newestFirst } from '../../db/paging.ts';
import { openDestination } from '../../delivery/destinations/spec.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import type { Scope } from '../accounts/roles.ts';
import type { AppsTable } from '../oauth/tables.ts';
import { type Change, checkManifest, type Manifest, manifestChanges, type Subscription } from './manifest.ts';
import { jsonArray, ownedAppRow } from './registry.ts';
import { sealedDestinations } from './subscription-destination.ts';
import { syncSubscriptionTargets } from './subscriptions.ts';
import type { AppVersionsTable } from './tables.ts';

/** A version as the developer API shows it (CONTRACT.md "Apps as code"). */
export interface AppVersion {
  id: string;
  number: number;
  status: AppVersionsTable['status'];
  manifest: Manifest;
  changes: Change[];
  message: string | null;
  created_at: string;
  released_at: string | null;
}

function parsed<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

export function presentVersion(row: AppVersionsTable): AppVersion {
  return {
    id: row.id,
    number: row.number,
    status: row.status,
    manifest: parsed<Manifest>(row.manifest),
    changes: parsed<Change[]>(row.changes),
    message: row.message,
    created_at: row.created_at.toISOString(),
    released_at: row.released_at?.toISOString() ?? null,
  };
}

/**
 * The fields a person approves on the consent page (service.ts REVIEWED_FIELDS) and the optional
 * scopes, which they approve later: on a published app a release may not change them. Nor, for a
 * subscription, where its messages go and which (reviewedChanges; CONTRACT.md "Apps as code").
 */
const REVIEWED_PATHS = new Set([
  '/name',
  '/description',
  '/homepage_url',
  '/privacy_url',
  '/support_url',
  '/redirect_uris',
  '/scopes',
  '/events_url',
  '/optional_scopes',
]);

const SUBSCRIPTION_PATH = /^\/subscriptions\/\d+$/;

/**
 * Where its messages go and what they are (CONTRACT.md, Trust 3: reviewed whole): an HTTPS URL
 * with its path, a broker destination with its kind, URL, exchange, routing key or subject, and
 * the event types. Its credentials are compared apart (credentialChanges: they are sealed).
 */
function reviewedSubscriptionChanges(path: string, from: unknown, to: unknown): string[] {
  const before = from as Subscription | null;
  const after = to as Subscription | null;
  // A subscription added or removed sends, or stops sending, messages somewhere.
  if (!before || !after) return [path.slice(1)];
  const fields: string[] = [];
  const placeOf = (subscription: Subscription) =>
    canonicalJson(subscription.destination ?? { type: 'https', url: subscription.url });
  if (placeOf(before) !== placeOf(after))
    fields.push(`${path.slice(1)}/${before.destination || after.destination ? 'destination' : 'url'}`);
  const types = (subscription: Subscription) => [...new Set(subscription.event_types)].sort().join(' ');
  if (types(before) !== types(after)) fields.push(`${path.slice(1)}/event_types`);
  return fields;
}

/**
 * A broker subscription whose credentials differ from the active version's (the manifest shows
 * them masked, so only the sealed destinations tell): reviewed too, as a change of destination.
 */
export function credentialChanges(
  ctx: AppContext,
  activeSealed: string | null,
  versionSealed: string | null,
): string[] {
  const before = sealedDestinations(activeSealed);
  const after = sealedDestinations(versionSealed);
  const fields: string[] = [];
  for (let index = 0; index < Math.min(before.length, after.length); index += 1) {
    const [was, now] = [before[index], after[index]];
    if (!was || !now) continue;
    if (openDestination(ctx.secrets, was).url !== openDestination(ctx.secrets, now).url)
      fields.push(`subscriptions/${index}/destination`);
  }
  return fields;
}

/** The reviewed fields a change touches; a subscription's filter, test flag and delivery settings are not. */
export function reviewedChanges(changes: readonly Change[]): string[] {
  return changes.flatMap((change) => {
    if (REVIEWED_PATHS.has(change.path)) return [change.path.slice(1)];
    if (SUBSCRIPTION_PATH.test(change.path))
      return reviewedSubscriptionChanges(change.path, change.from, change.to);
    return [];
  });
}

async function activeVersion(db: Db, appId: string): Promise<AppVersionsTable | undefined> {
  return db
    .selectFrom('app_versions')
    .selectAll()
    .where('app_id', '=', appId)
    .where('status', '=', 'active')
    .executeTakeFirst();
}

/** The optional scopes of the app's active version: asked for at runtime (CONTRACT.md, optional scopes). */
export async function activeOptionalScopes(db: Db, appId: string): Promise<Scope[]> {
  const active = await activeVersion(db, appId);
  return active ? (parsed<Manifest>(active.manifest).optional_scopes ?? []) : [];
}

/** The manifest of an app's current fields, with the active version's subscriptions and optional scopes. */
export function manifestOfApp(
  row: AppsTable,
  rest: Pick<Manifest, 'optional_scopes' | 'subscriptions'>,
): Manifest {
  return {
    name: row.name,
    description: row.description,
    homepage_url: row.homepage_url,
    privacy_url: row.privacy_url,
    support_url: row.support_url,
    redirect_uris: jsonArray<string>(row.redirect_uris),
    scopes: jsonArray<Scope>(row.scopes),
    optional_scopes: rest.optional_scopes,
    events_url: row.events_url,
    subscriptions: rest.subscriptions,
  };
}

/** The app's configuration now: its fields, with the active version's subscriptions and optional scopes. */
async function currentManifest(trx: Trx, row: AppsTable): Promise<Manifest> {
  const active = await activeVersion(trx, row.id);
  const manifest = active ? parsed<Manifest>(active.manifest) : null;
  return manifestOfApp(row, {
    optional_scopes: manifest?.optional_scopes ?? [],
    subscriptions: manifest?.subscriptions ?? [],
  });
}

async function lockedApp(trx: Trx, appId: string): Promise<AppsTable> {
  return trx.selectFrom('apps').selectAll().where('id', '=', appId).forUpdate().executeTakeFirstOrThrow();
}

async function nextNumber(trx: Trx, appId: string): Promise<number> {
  const { max } = await trx
    .selectFrom('app_versions')
    .select((eb) => eb.fn.max('number').as('max'))
    .where('app_id', '=', appId)
    .executeTakeFirstOrThrow();
  return Number(max ?? 0) + 1;
}

/** POST /v1/developer/apps/{id}/versions: a draft, with the changes from the active version. */
export async function createVersion(
  ctx: AppContext,
  userId: string,
  appId: string,
  input: { manifest: unknown; message?: string | null },
): Promise<AppVersion> {
  const app = await ownedAppRow(ctx, userId, appId);
  // A broker URL sent back masked keeps the password the active version has for it.
  const active = await activeVersion(ctx.db, app.id);
  const { manifest, destinations } = await checkManifest(
    ctx,
    input.manifest,
    '/manifest',
    sealedDestinations(active?.destinations_sealed ?? null),
    active ? (parsed<Manifest>(active.manifest).subscriptions ?? []) : [],
  );
  const row = await ctx.db.transaction().execute(async (trx) => {
    // The app row's lock numbers versions one at a time.
    const locked = await lockedApp(trx, app.id);
    const changes = manifestChanges(await currentManifest(trx, locked), manifest);
    const version: AppVersionsTable = {
      id: newId('apv'),
      app_id: app.id,
      number: await nextNumber(trx, app.id),
      status: 'draft',
      manifest: JSON.stringify(manifest),
      changes: JSON.stringify(changes),
      message: input.message?.trim() || null,
      destinations_sealed: destinations.some((sealed) => sealed !== null)
        ? JSON.stringify(destinations)
        : null,
      created_by: userId,
      created_at: ctx.clock.now(),
      released_at: null,
    };
    await trx.insertInto('app_versions').values(version).execute();
    return { ...version, manifest, changes };
  });
  return presentVersion(row);
}

export async function listVersions(
  ctx: AppContext,
  userId: string,
  appId: string,
  page: PageRequest = {},
): Promise<Page<AppVersion>> {
  const app = await ownedAppRow(ctx, userId, appId);
  return newestFirst(
    ctx.db.selectFrom('app_versions').selectAll().where('app_id', '=', app.id),
    'app_versions',
    page,
    presentVersion,
  );
}

export async function versionRow(ctx: AppContext | { db: Trx }, appId: string, versionId: string) {
  const row = await ctx.db
    .selectFrom('app_versions')
    .selectAll()
    .where('id', '=', versionId)
    .where('app_id', '=', appId)
    .executeTakeFirst();
  if (!row) throw new AppError('app_version.not_found');
  return row;
}

export async function getVersion(
  ctx: AppContext,
  userId: string,
  appId: string,
  versionId: string,
): Promise<AppVersion> {
  const app = await ownedAppRow(ctx, userId, appId);
  return presentVersion(await versionRow(ctx, app.id, versionId));
}

/**
 * Makes a version the active one, in the caller's transaction (the app row locked): the one
 * before is superseded and the app takes the manifest's fields.
 */
export async function activateVersion(
  ctx: AppContext,
  trx: Trx,
  appId: string,
  versionId: string,
): Promise<AppVersionsTable> {
  const now = ctx.clock.now();
  await trx
    .updateTable('app_versions')
    .set({ status: 'superseded' })
    .where('app_id', '=', appId)
    .where('status', '=', 'active')
    .where('id', '!=', versionId)
    .execute();
  const row = await trx
    .updateTable('app_versions')
    .set({ status: 'active', released_at: now })
    .where('id', '=', versionId)
    .where('app_id', '=', appId)
    .returningAll()
    .executeTakeFirstOrThrow();
  const manifest = parsed<Manifest>(row.manifest);
  await trx
    .updateTable('apps')
    .set({
      name: manifest.name,
      description: manifest.description,
      homepage_url: manifest.homepage_url,
      privacy_url: manifest.privacy_url,
      support_url: manifest.support_url,
      redirect_uris: JSON.stringify(manifest.redirect_uris),
      scopes: JSON.stringify(manifest.scopes),
      events_url: manifest.events_url,
      updated_at: now,
    })
    .where('id', '=', appId)
    .execute();
  // Every installation's subscription targets follow the version, in this transaction.
  await syncSubscriptionTargets(trx, appId, now);
  return row;
}

/**
 * POST .../versions/{vid}/release: the version becomes active; releasing an older one is the
 * rollback. A published app changes reviewed fields only through a submission naming the version.
 */
export async function releaseVersion(
  ctx: AppContext,
  userId: string,
  appId: string,
  versionId: string,
): Promise<AppVersion> {
  const app = await ownedAppRow(ctx, userId, appId);
  const row = await ctx.db.transaction().execute(async (trx) => {
    const locked = await lockedApp(trx, app.id);
    const version = await versionRow({ db: trx }, app.id, versionId);
    if (version.status === 'active') return version;
    if (locked.status === 'suspended') throw new AppError('app.suspended');
    if (locked.status === 'published') {
      const changes = manifestChanges(await currentManifest(trx, locked), parsed<Manifest>(version.manifest));
      const active = await activeVersion(trx, app.id);
      const fields = [
        ...new Set([
          ...reviewedChanges(changes),
          ...credentialChanges(ctx, active?.destinations_sealed ?? null, version.destinations_sealed),
        ]),
      ];
      if (fields.length > 0) {
        throw new AppError(
          'app.published_requires_review',
          `Version ${version.number} changes ${fields.join(', ')}: submit it for review with version_id; approval releases it`,
          { fields, version_id: version.id },
        );
      }
    }
    return activateVersion(ctx, trx, app.id, version.id);
  });
  return presentVersion(row);
}

/**
 * After the app's fields changed another way (PATCH, the events URL, an approved submission
 * without a version), records them as a new active version so the history holds every
 * configuration the app had and the active version is always what the app is.
 */
export async function recordFieldsAsVersion(
  ctx: AppContext,
  trx: Trx,
  appId: string,
  userId: string | null,
  message: string,
): Promise<void> {
  const locked = await lockedApp(trx, appId);
  const active = await activeVersion(trx, appId);
  const manifest = await currentManifest(trx, locked);
  // The first version is where the history starts: it changes nothing that came before.
  const changes = active ? manifestChanges(parsed<Manifest>(active.manifest), manifest) : [];
  if (active && changes.length === 0) return;
  const now = ctx.clock.now();
  if (active) {
    await trx.updateTable('app_versions').set({ status: 'superseded' }).where('id', '=', active.id).execute();
  }
  await trx
    .insertInto('app_versions')
    .values({
      id: newId('apv'),
      app_id: appId,
      number: await nextNumber(trx, appId),
      status: 'active',
      manifest: JSON.stringify(manifest),
      changes: JSON.stringify(changes),
      message,
      // The subscriptions are the active version's: so are their broker destinations.
      destinations_sealed: active?.destinations_sealed ?? null,
      created_by: userId,
      created_at: now,
      released_at: now,
    })
    .execute();
}

import { sql } from 'kysely';
import { type AppContext, runAfterCommit, type Trx } from '../../context.ts';
import { constantTimeEqual } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { hashSecret, newId } from '../../lib/ids.ts';
import type { Scope } from '../accounts/roles.ts';
import { recordInstallation, recordUninstall } from '../console/records.ts';
import { cancelWithheldDeliveries } from '../oauth/installation-grants.ts';
import type { Resource } from '../oauth/resource.ts';
import type { AppsTable } from '../oauth/tables.ts';
import { syncSubscriptionTargets } from './subscriptions.ts';

/**
 * What the OAuth endpoints need of apps and installations. The OAuth module codes against this
 * file only; the developer API (service.ts) and the installations API (installations.ts) build on it.
 */
export interface AppRecord {
  id: string;
  name: string;
  description: string;
  homepage_url: string | null;
  privacy_url: string | null;
  support_url: string | null;
  /** Compared with the authorization request's redirect_uri by exact string. */
  redirect_uris: string[];
  scopes: Scope[];
  kind: 'confidential' | 'public';
  client_secret_hash: string | null;
  status: 'private' | 'published' | 'delisted' | 'suspended';
  /** Null for an agent client (a metadata document or a registration): no developer. */
  developer_id: string | null;
}

/** jsonb arrays arrive parsed from both engines; a text value (older drivers) is parsed here. */
export function jsonArray<T>(value: unknown): T[] {
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(parsed) ? (parsed as T[]) : [];
}

export function toAppRecord(row: AppsTable): AppRecord {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    homepage_url: row.homepage_url,
    privacy_url: row.privacy_url,
    support_url: row.support_url,
    redirect_uris: jsonArray<string>(row.redirect_uris),
    scopes: jsonArray<Scope>(row.scopes),
    kind: row.kind,
    client_secret_hash: row.client_secret_hash,
    status: row.status,
    developer_id: row.developer_id,
  };
}

/** The app is its own client: client_id is the app id (CONTRACT.md, Conventions). */
export async function findAppByClientId(ctx: AppContext, clientId: string): Promise<AppRecord | null> {
  // An app's id, or an agent's metadata document URL (issue 31).
  const appId = clientId.startsWith('app_') && clientId.length <= 64;
  if (!appId && !(clientId.startsWith('https://') && clientId.length <= 2000)) return null;
  const row = await ctx.db.selectFrom('apps').selectAll().where('id', '=', clientId).executeTakeFirst();
  return row ? toAppRecord(row) : null;
}

/** The developer's own app; another developer's app does not exist for them. */
export async function ownedAppRow(ctx: AppContext, developerId: string, appId: string): Promise<AppsTable> {
  const row = await ctx.db
    .selectFrom('apps')
    .selectAll()
    .where('id', '=', appId)
    .where('developer_id', '=', developerId)
    .executeTakeFirst();
  if (!row) throw new AppError('app.not_found');
  return row;
}

/** A public app has no secret and never verifies one; a confidential app's secret is kept as SHA-256. */
export function verifyClientSecret(app: AppRecord, secret: string): boolean {
  if (app.kind !== 'confidential' || !app.client_secret_hash || !secret) return false;
  return constantTimeEqual(hashSecret(secret), app.client_secret_hash);
}

export interface InstallationInput {
  appId: string;
  tenantId: string;
  customerAccountId: string | null;
  /** The approving person; app tokens act as them. */
  userId: string;
  scopes: readonly Scope[];
  /** False for an agent connection to test data (issue 31); apps are live. */
  livemode?: boolean;
  /** An agent client's installation is an agent connection, `agc_` (CONTRACT.md, Agents). */
  agent?: boolean;
  /** The resource approved (`v1` unless given): each has its own grant, an `mcp` one is `agc_`. */
  resource?: Resource;
}

/**
 * Records an approval, inside the approval's transaction. Approving the same app again for the same
 * company or merchant account and the same resource updates that one grant (unique index
 * installations_account; a grant for the other resource is another row, never touched here):
 * the new approver, the scopes they granted and the time replace the old ones, and what the earlier
 * approval gave ends here: its codes not yet exchanged are deleted and its tokens revoked (the app
 * holds new ones from the new code), so no token outlives the grant it came from. Codes go first:
 * deleting a code waits for an exchange of it that is under way, so the tokens that exchange made
 * are there to be revoked. Each approval is an audit event.
 */
export async function upsertInstallation(
  ctx: AppContext,
  trx: Trx,
  input: InstallationInput,
): Promise<{ id: string }> {
  const now = ctx.clock.now();
  const scopes = JSON.stringify([...new Set(input.scopes)]);
  const resource = input.resource ?? 'v1';
  const newInstallationId = newId(input.agent || resource === 'mcp' ? 'agc' : 'inst');
  const row = await trx
    .insertInto('installations')
    .values({
      id: newInstallationId,
      app_id: input.appId,
      tenant_id: input.tenantId,
      customer_account_id: input.customerAccountId,
      user_id: input.userId,
      scopes,
      approved_at: now,
      livemode: input.livemode ?? true,
      resource,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['app_id', 'tenant_id', 'customer_account_id', 'resource']).doUpdateSet({
        user_id: input.userId,
        scopes,
        approved_at: now,
        livemode: input.livemode ?? true,
        updated_at: now,
      }),
    )
    .returning('id')
    .executeTakeFirstOrThrow();
  // The row is new only if it kept the new id (an approval again updates the one there).
  if (row.id === newInstallationId) await countStoreInstall(trx, { app_id: input.appId, resource }, 1);
  await recordInstallation(trx, { ...input, id: row.id, scopes }, now);
  // The app's subscriptions reach the new installation (its grant decides at each event).
  await syncSubscriptionTargets(trx, input.appId, now, { id: row.id, tenantId: input.tenantId });
  const codes = await trx
    .deleteFrom('oauth_codes')
    .where('installation_id', '=', row.id)
    .where('tenant_id', '=', input.tenantId)
    .executeTakeFirst();
  const tokens = await trx
    .updateTable('oauth_tokens')
    .set({ revoked_at: now })
    .where('installation_id', '=', row.id)
    .where('tenant_id', '=', input.tenantId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  // Narrower scopes: what waits for the installation's endpoints that they no longer allow is
  // cancelled (decision 0024).
  await cancelWithheldDeliveries(trx, input.tenantId, now);
  await trx
    .insertInto('audit_events')
    .values({
      id: newId('aud'),
      tenant_id: input.tenantId,
      actor: input.userId,
      action: 'oauth.installation_approved',
      details: JSON.stringify({
        installation_id: row.id,
        app_id: input.appId,
        customer_account_id: input.customerAccountId,
        scopes: JSON.parse(scopes),
        deleted_codes: Number(codes.numDeletedRows),
        revoked_tokens: Number(tokens.numUpdatedRows),
      }),
      created_at: now,
    })
    .execute();
  return { id: row.id };
}

export interface UninstalledInstallation {
  id: string;
  app_id: string;
  tenant_id: string;
  customer_account_id: string | null;
  uninstalled_at: Date;
}

/**
 * Called inside the uninstall transaction, after the row is gone. The `app.uninstalled` app event
 * (next issue) hooks in here so that it is written in the same transaction as the removal.
 */
export type UninstallListener = (
  ctx: AppContext,
  trx: Trx,
  removed: UninstalledInstallation,
) => Promise<void>;
export const uninstallListeners: UninstallListener[] = [];

/**
 * The store's install count (app_store_stats.install_count) counts the apps' /v1 grants. The
 * statements that add and remove installations keep it, in their transaction (no trigger: decision
 * 0071); an app's first one makes its row.
 */
async function countStoreInstall(
  trx: Trx,
  installation: { app_id: string; resource: string },
  change: 1 | -1,
): Promise<void> {
  if (installation.resource !== 'v1') return;
  if (change === 1) {
    await trx
      .insertInto('app_store_stats')
      .values({ app_id: installation.app_id, install_count: 1 })
      .onConflict((oc) =>
        oc
          .column('app_id')
          .doUpdateSet((eb) => ({ install_count: eb('app_store_stats.install_count', '+', 1) })),
      )
      .execute();
    return;
  }
  await trx
    .updateTable('app_store_stats')
    .set((eb) => ({ install_count: eb.fn('greatest', [eb('install_count', '-', 1), eb.lit(0)]) }))
    .where('app_id', '=', installation.app_id)
    .execute();
}

/**
 * What goes with an installation just deleted, in the deleting transaction (the foreign keys that
 * cascaded once are gone, decision 0071): its codes and tokens (every token ends at once), and its
 * place in the store's install count.
 */
export async function removeInstallationGrants(
  trx: Trx,
  removed: { id: string; app_id: string; tenant_id: string; resource: string },
): Promise<void> {
  await trx
    .deleteFrom('oauth_codes')
    .where('installation_id', '=', removed.id)
    .where('tenant_id', '=', removed.tenant_id)
    .execute();
  await trx
    .deleteFrom('oauth_tokens')
    .where('installation_id', '=', removed.id)
    .where('tenant_id', '=', removed.tenant_id)
    .execute();
  await countStoreInstall(trx, removed, -1);
}

/**
 * Removes an installation of the company (limited to one merchant account when given): its codes
 * and tokens go with it (removeInstallationGrants), and so do its webhook endpoints (their foreign
 * key cascades).
 */
export async function uninstall(
  ctx: AppContext,
  tenantId: string,
  installationId: string,
  options: { customerAccountId?: string | null; reason?: string | null } = {},
): Promise<UninstalledInstallation> {
  const removed = await ctx.db.transaction().execute(async (trx) => {
    let query = trx
      .deleteFrom('installations')
      .where('id', '=', installationId)
      .where('tenant_id', '=', tenantId);
    if (options.customerAccountId) query = query.where('customer_account_id', '=', options.customerAccountId);
    const deleted = await query
      .returning(['id', 'app_id', 'tenant_id', 'customer_account_id', 'resource'])
      .executeTakeFirst();
    if (!deleted) throw new AppError('installation.not_found');
    await removeInstallationGrants(trx, deleted);
    // The app leaves the company (or merchant account) whole: its grant for the other resource
    // (decision 0063 keeps `/v1` and `/mcp` apart) ends in the same transaction, before
    // `app.uninstalled` is queued, so no token of the app outlives the uninstall.
    const siblings = await trx
      .deleteFrom('installations')
      .where('tenant_id', '=', tenantId)
      .where('app_id', '=', deleted.app_id)
      .where('resource', '<>', deleted.resource)
      .where(sql<boolean>`customer_account_id IS NOT DISTINCT FROM ${deleted.customer_account_id}`)
      .returning(['id', 'app_id', 'tenant_id', 'resource'])
      .execute();
    for (const sibling of siblings) await removeInstallationGrants(trx, sibling);
    const { resource: _, ...row } = deleted;
    const removed = { ...row, uninstalled_at: ctx.clock.now() };
    await recordUninstall(trx, removed, removed.uninstalled_at, options.reason ?? null);
    for (const listener of uninstallListeners) await listener(ctx, trx, removed);
    return removed;
  });
  runAfterCommit(ctx);
  return removed;
}

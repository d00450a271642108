import type { Selectable } from 'kysely';
import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { AppError, validationError } from '../../lib/errors.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { requireRole } from '../accounts/companies.ts';
import { managesIntegrations, type Scope } from '../accounts/roles.ts';
import type { HeldReason } from '../oauth/installation-grants.ts';
import type { InstallationsTable } from '../oauth/tables.ts';
import { jsonArray, uninstall } from './registry.ts';

/** An installed app as the company sees it (CONTRACT.md, installations). */
export interface Installation {
  id: string;
  app_id: string;
  app_name: string;
  /** The app's status: a suspended app's tokens, webhooks and events are stopped (spec 3.2). */
  app_status: string;
  /**
   * Why the installation receives nothing on its endpoints (decision 0024): `app_suspended`, or
   * `needs_approval` (its approver left the company or lost the role); null while its grant is in force.
   */
  held_reason: HeldReason | null;
  tenant_id: string;
  customer_account_id: string | null;
  scopes: Scope[];
  /** The person who approved last; app tokens act as them (approved_by says the same). */
  user_id: string;
  approved_by: string;
  approved_at: string;
  created_at: string;
  updated_at: string;
}

type InstallationRow = Selectable<InstallationsTable> & {
  app_name: string;
  app_status: string;
  held_reason: HeldReason | null;
};

function presentInstallation(row: InstallationRow): Installation {
  return {
    id: row.id,
    app_id: row.app_id,
    app_name: row.app_name,
    app_status: row.app_status,
    held_reason: row.held_reason,
    tenant_id: row.tenant_id,
    customer_account_id: row.customer_account_id,
    scopes: jsonArray<Scope>(row.scopes),
    user_id: row.user_id,
    approved_by: row.user_id,
    approved_at: row.approved_at.toISOString(),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * Only those who manage integrations (owner, admin, merchant admin) see and remove installations; a
 * merchant admin only its own account's. Answers the account the caller is limited to, or null.
 */
export async function integrationScope(
  ctx: AppContext,
  userId: string,
  tenantId: string,
): Promise<string | null> {
  const membership = await requireRole(ctx, userId, tenantId, managesIntegrations);
  return membership.customer_account_id;
}

function installationsOf(ctx: AppContext, tenantId: string, accountId: string | null) {
  let query = ctx.db
    .selectFrom('installations')
    .innerJoin('apps', 'apps.id', 'installations.app_id')
    .innerJoin('installation_grants as g', 'g.installation_id', 'installations.id')
    .selectAll('installations')
    .select(['apps.name as app_name', 'apps.status as app_status', 'g.held_reason'])
    .where('installations.tenant_id', '=', tenantId)
    // Grants for /mcp are agent connections, listed apart (/agent-connections; migration 0067).
    .where('installations.resource', '=', 'v1');
  if (accountId) query = query.where('installations.customer_account_id', '=', accountId);
  return query;
}

export async function listInstallations(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  page: PageRequest = {},
): Promise<Page<Installation>> {
  const accountId = await integrationScope(ctx, userId, tenantId);
  return newestFirst(installationsOf(ctx, tenantId, accountId), 'installations', page, presentInstallation);
}

export async function getInstallation(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  installationId: string,
): Promise<Installation> {
  const accountId = await integrationScope(ctx, userId, tenantId);
  const row = await installationsOf(ctx, tenantId, accountId)
    .where('installations.id', '=', installationId)
    .executeTakeFirst();
  if (!row) throw new AppError('installation.not_found');
  return presentInstallation(row);
}

/** Why a company uninstalls, as it may say (the developer console shows it to the app's developer). */
export const UNINSTALL_REASONS = {
  not_needed: 'No longer needed',
  missing_features: 'Missing features',
  not_working: 'Did not work as expected',
  too_expensive: 'Too expensive',
  switched: 'Switched to another app',
  other: 'Other',
} as const;
export type UninstallReasonChoice = keyof typeof UNINSTALL_REASONS;
export const MAX_UNINSTALL_REASON = 500;

/** The reason as the developer reads it: the choice, then the company's words; null when none given. */
export function uninstallReason(choice: string | undefined, words: string | undefined): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this removes.
  const text = (words ?? '').replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  if (choice && !Object.hasOwn(UNINSTALL_REASONS, choice)) {
    throw validationError([
      { path: '/reason', message: `must be one of ${Object.keys(UNINSTALL_REASONS).join(', ')}` },
    ]);
  }
  if (text.length > MAX_UNINSTALL_REASON) {
    throw validationError([
      { path: '/reason_text', message: `must be at most ${MAX_UNINSTALL_REASON} characters` },
    ]);
  }
  const label = choice
    ? UNINSTALL_REASONS[choice as UninstallReasonChoice]
    : text
      ? UNINSTALL_REASONS.other
      : null;
  if (!label) return null;
  return text ? `${label}: ${text}` : label;
}

/** The company removes the app: every token of the installation ends and its endpoints are deleted. */
export async function uninstallAsPerson(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  installationId: string,
  reason: string | null = null,
): Promise<void> {
  const accountId = await integrationScope(ctx, userId, tenantId);
  await uninstall(ctx, tenantId, installationId, { customerAccountId: accountId, reason });
}

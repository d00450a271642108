import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { AppError } from '../../lib/errors.ts';
import { newId, newTenantId } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { isMerchantRole, managesIntegrations, managesMembers, type Role } from './roles.ts';
import type { CompaniesTable, CustomerAccountsTable, MembershipsTable } from './tables.ts';
import { normalizeEmail } from './users.ts';

/** The column's default (migration 0086) and the bounds PATCH accepts. */
export const STALL_AFTER_HOURS_DEFAULT = 72;
export const STALL_AFTER_HOURS_MIN = 1;
export const STALL_AFTER_HOURS_MAX = 720;

export interface Company {
  id: string;
  name: string;
  live: boolean;
  /** Which modes AI agents may use (issue 31). */
  agent_access: { test: boolean; live: boolean };
  /** Hours without news before a shipment is stalled (shipment.stalled, decision 0081). */
  stall_after_hours: number;
  created_at: string;
  updated_at: string;
}

export interface CustomerAccount {
  id: string;
  tenant_id: string;
  name: string;
  created_at: string;
}

export interface Membership {
  id: string;
  tenant_id: string;
  user_id: string;
  email: string;
  name: string;
  role: string;
  customer_account_id: string | null;
  created_at: string;
}

export function presentCompany(
  row: Omit<CompaniesTable, 'stall_after_hours'> & { stall_after_hours?: number },
): Company {
  return {
    id: row.id,
    name: row.name,
    live: row.live,
    agent_access: {
      test: (row.agent_access as { test?: boolean } | null)?.test !== false,
      live: (row.agent_access as { live?: boolean } | null)?.live === true,
    },
    stall_after_hours: row.stall_after_hours ?? STALL_AFTER_HOURS_DEFAULT,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentCustomerAccount(row: CustomerAccountsTable): CustomerAccount {
  return { id: row.id, tenant_id: row.tenant_id, name: row.name, created_at: row.created_at.toISOString() };
}

function presentMembership(row: MembershipsTable & { email: string; name: string }): Membership {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    user_id: row.user_id,
    email: row.email,
    name: row.name,
    role: row.role,
    customer_account_id: row.customer_account_id,
    created_at: row.created_at.toISOString(),
  };
}

/** The caller's membership in a company; a company the caller is not in does not exist for them. */
export async function membershipOf(
  ctx: AppContext,
  userId: string,
  tenantId: string,
): Promise<MembershipsTable> {
  const row = await ctx.db
    .selectFrom('memberships')
    .selectAll()
    .where('user_id', '=', userId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw new AppError('company.not_found');
  return row;
}

export async function requireRole(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  allowed: (role: string) => boolean,
): Promise<MembershipsTable> {
  const membership = await membershipOf(ctx, userId, tenantId);
  if (!allowed(membership.role)) {
    throw new AppError('auth.insufficient_scope', `The role ${membership.role} does not allow this`);
  }
  return membership;
}

export async function createCompany(
  ctx: AppContext,
  userId: string,
  input: { name: string },
): Promise<Company> {
  const now = ctx.clock.now();
  const company = {
    id: newTenantId(),
    name: input.name.trim(),
    live: false,
    agent_access: { test: true, live: false },
    created_at: now,
    updated_at: now,
  };
  await ctx.db.transaction().execute(async (trx) => {
    await trx.insertInto('companies').values(company).execute();
    await trx
      .insertInto('memberships')
      .values({
        id: newId('mem'),
        tenant_id: company.id,
        user_id: userId,
        role: 'owner',
        customer_account_id: null,
        created_at: now,
      })
      .execute();
  });
  return presentCompany(company);
}

export async function getCompany(ctx: AppContext, tenantId: string): Promise<Company> {
  const row = await ctx.db.selectFrom('companies').selectAll().where('id', '=', tenantId).executeTakeFirst();
  if (!row) throw new AppError('company.not_found');
  return presentCompany(row);
}

/** Sets how long a shipment may go without news before `shipment.stalled` (the worker's job reads it). */
export async function setStallAfterHours(ctx: AppContext, tenantId: string, hours: number): Promise<void> {
  await ctx.db
    .updateTable('companies')
    .set({ stall_after_hours: hours, updated_at: ctx.clock.now() })
    .where('id', '=', tenantId)
    .execute();
}

export async function goLive(ctx: AppContext, userId: string, tenantId: string): Promise<Company> {
  await requireRole(ctx, userId, tenantId, (role) => role === 'owner');
  const row = await ctx.db
    .updateTable('companies')
    .set({ live: true, updated_at: ctx.clock.now() })
    .where('id', '=', tenantId)
    .returningAll()
    .executeTakeFirstOrThrow();
  return presentCompany(row);
}

/** The company's members; for a merchant member, only the members of their own merchant account. */
export async function listMembers(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  page: PageRequest = {},
): Promise<Page<Membership>> {
  const caller = await membershipOf(ctx, userId, tenantId);
  let query = ctx.db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .selectAll('memberships')
    .select(['users.email', 'users.name'])
    .where('memberships.tenant_id', '=', tenantId);
  // A person limited to one merchant account sees that account's members, not the company's.
  if (caller.customer_account_id) {
    query = query.where('memberships.customer_account_id', '=', caller.customer_account_id);
  }
  return newestFirst(query, 'memberships', page, presentMembership);
}

export async function addMember(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  input: { email: string; role: Role; customer_account_id?: string | null },
): Promise<Membership> {
  const actor = await requireRole(ctx, userId, tenantId, managesMembers);
  if (input.role === 'owner' && actor.role !== 'owner') {
    throw new AppError('auth.insufficient_scope', 'Only an owner makes another owner');
  }
  const accountId = input.customer_account_id ?? null;
  if (isMerchantRole(input.role) !== (accountId !== null)) {
    throw new AppError('validation.failed', 'Merchant roles, and only they, name a customer_account_id', {
      errors: [{ path: '/customer_account_id', message: 'required with a merchant role, refused otherwise' }],
    });
  }
  if (accountId) await getCustomerAccountRow(ctx, tenantId, accountId);
  const person = await ctx.db
    .selectFrom('users')
    .select(['id', 'email', 'name', 'email_verified_at'])
    .where('email', '=', normalizeEmail(input.email))
    .executeTakeFirst();
  if (!person) throw new AppError('user.not_found', 'No person has signed up with that e-mail');
  // An address proves who joins only once its owner has opened the link sent to it: otherwise
  // whoever signed up first with a colleague's address would join in the colleague's place.
  if (!person.email_verified_at) {
    throw new AppError(
      'member.email_not_verified',
      'That person has not confirmed their e-mail address yet: add them once they have',
    );
  }
  const row = {
    id: newId('mem'),
    tenant_id: tenantId,
    user_id: person.id,
    role: input.role,
    customer_account_id: accountId,
    created_at: ctx.clock.now(),
  };
  const inserted = await ctx.db
    .insertInto('memberships')
    .values(row)
    .onConflict((oc) => oc.columns(['tenant_id', 'user_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) throw new AppError('member.already_exists');
  return presentMembership({ ...row, email: person.email, name: person.name });
}

/**
 * The person leaves the company. Their app access tokens stop working at once, because every
 * app-token call checks the approver's current membership; the endpoints of the installations they
 * approved receive nothing until a person approves again (decision 0024).
 */
export async function removeMember(ctx: AppContext, userId: string, tenantId: string, memberUserId: string) {
  const leavingSelf = userId === memberUserId;
  const actor = leavingSelf ? null : await requireRole(ctx, userId, tenantId, managesMembers);
  await ctx.db.transaction().execute(async (trx) => {
    // The company row lock orders concurrent removals, so two owners cannot remove each other at once.
    await trx.selectFrom('companies').select('id').where('id', '=', tenantId).forUpdate().execute();
    const target = await trx
      .selectFrom('memberships')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('user_id', '=', memberUserId)
      .forUpdate()
      .executeTakeFirst();
    if (!target) throw new AppError('member.not_found');
    if (target.role === 'owner' && actor && actor.role !== 'owner') {
      throw new AppError('auth.insufficient_scope', 'Only an owner removes another owner');
    }
    if (target.role === 'owner') {
      const owners = await trx
        .selectFrom('memberships')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('tenant_id', '=', tenantId)
        .where('role', '=', 'owner')
        .executeTakeFirstOrThrow();
      if (Number(owners.n) <= 1) throw new AppError('member.last_owner');
    }
    await trx.deleteFrom('memberships').where('id', '=', target.id).execute();
    // The installations they approved receive nothing more: what waits for their endpoints is
    // cancelled (decision 0024; the oauth module's hook).
    const left = { tenantId, userId: memberUserId, at: ctx.clock.now() };
    for (const hook of ctx.memberLeftHooks) await hook(trx, left);
  });
}

export async function createCustomerAccount(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  input: { name: string },
): Promise<CustomerAccount> {
  await requireRole(ctx, userId, tenantId, managesMembers);
  const row = {
    id: newId('acct'),
    tenant_id: tenantId,
    name: input.name.trim(),
    created_at: ctx.clock.now(),
  };
  await ctx.db.insertInto('customer_accounts').values(row).execute();
  return presentCustomerAccount(row);
}

export async function listCustomerAccounts(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  page: PageRequest = {},
): Promise<Page<CustomerAccount>> {
  const membership = await membershipOf(ctx, userId, tenantId);
  let query = ctx.db.selectFrom('customer_accounts').selectAll().where('tenant_id', '=', tenantId);
  if (membership.customer_account_id) query = query.where('id', '=', membership.customer_account_id);
  return newestFirst(query, 'customer_accounts', page, presentCustomerAccount);
}

export async function getCustomerAccountRow(
  ctx: AppContext,
  tenantId: string,
  accountId: string,
): Promise<CustomerAccountsTable> {
  const row = await ctx.db
    .selectFrom('customer_accounts')
    .selectAll()
    .where('id', '=', accountId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw new AppError('customer_account.not_found');
  return row;
}

export interface MembershipSummary {
  tenant_id: string;
  company_name: string;
  company_live: boolean;
  role: string;
  customer_account_id: string | null;
  customer_account_name: string | null;
  manages_integrations: boolean;
}

export async function membershipsOfPerson(ctx: AppContext, userId: string): Promise<MembershipSummary[]> {
  const rows = await ctx.db
    .selectFrom('memberships')
    .innerJoin('companies', 'companies.id', 'memberships.tenant_id')
    .leftJoin('customer_accounts', 'customer_accounts.id', 'memberships.customer_account_id')
    .select([
      'memberships.tenant_id',
      'companies.name as company_name',
      'companies.live as company_live',
      'memberships.role',
      'memberships.customer_account_id',
      'customer_accounts.name as customer_account_name',
    ])
    .where('memberships.user_id', '=', userId)
    .orderBy('companies.name')
    .execute();
  return rows.map((row) => ({ ...row, manages_integrations: managesIntegrations(row.role) }));
}

import type { AppContext, Trx } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { newestFirst } from '../../db/paging.ts';
import { AppError, validationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { canSee, requireScope, type TenantAccess } from '../accounts/access.ts';
import { newSealedSecret, rotatedSecretColumns } from '../webhooks/endpoint-secrets.ts';
import type { InboundSourcesTable } from './tables.ts';

/** An inbound source as the API answers it (CONTRACT.md "Inbound"); never its secret unasked. */
export interface InboundSource {
  id: string;
  name: string;
  carrier_code: string;
  mode: 'live' | 'test';
  livemode: boolean;
  customer_account_id: string | null;
  /** Where the carrier POSTs its signed batches: `{base_url}/inbound/{id}`. */
  url: string;
  created_at: string;
  updated_at: string;
}

export interface CreateSourceInput {
  name: string;
  carrier_code: string;
  /** Defaults to the token's mode; another mode than the token's is refused. */
  mode?: 'live' | 'test';
  customer_account_id?: string | null;
}

export interface UpdateSourceInput {
  name?: string;
  carrier_code?: string;
}

const CARRIER_CODE = /^[a-z0-9-]{2,32}$/;

function checkName(name: string): string {
  const text = name.trim();
  if (text === '') throw validationError([{ path: '/name', message: 'must not be blank' }], undefined, 422);
  return text;
}

function checkCarrier(code: string): string {
  if (!CARRIER_CODE.test(code)) {
    throw validationError(
      [{ path: '/carrier_code', message: 'must be 2 to 32 of a-z, 0-9 and -' }],
      'carrier_code must be 2 to 32 of a-z, 0-9 and -',
      422,
    );
  }
  return code;
}

export function presentSource(ctx: Pick<AppContext, 'config'>, row: InboundSourcesTable): InboundSource {
  return {
    id: row.id,
    name: row.name,
    carrier_code: row.carrier_code,
    mode: row.livemode ? 'live' : 'test',
    livemode: row.livemode,
    customer_account_id: row.customer_account_id,
    url: `${ctx.config.baseUrl}/inbound/${row.id}`,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The source if the caller may see it (company, mode, merchant); foreign and unknown ids are 404. */
export async function findVisibleSource(
  db: Db | Trx,
  access: TenantAccess,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<InboundSourcesTable> {
  let query = db
    .selectFrom('inbound_sources')
    .selectAll()
    .where('id', '=', id)
    .where('tenant_id', '=', access.tenantId);
  if (options.forUpdate) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  if (!row || !canSee(access, row)) throw new AppError('inbound_source.not_found');
  return row;
}

/** The merchant account a new source is bound to: the token's own, or one of the company's named. */
async function merchantOf(
  ctx: AppContext,
  access: TenantAccess,
  requested: string | null | undefined,
): Promise<string | null> {
  if (access.customerAccountId !== null) {
    if (requested != null && requested !== access.customerAccountId) {
      throw new AppError('customer_account.not_found', 'This token is bound to another merchant account');
    }
    return access.customerAccountId;
  }
  if (requested == null) return null;
  const account = await ctx.db
    .selectFrom('customer_accounts')
    .select('id')
    .where('id', '=', requested)
    .where('tenant_id', '=', access.tenantId)
    .executeTakeFirst();
  if (!account) throw new AppError('customer_account.not_found');
  return account.id;
}

/** A new source in the caller's company and mode; the only answer that carries its secret. */
export async function createSource(
  ctx: AppContext,
  access: TenantAccess,
  input: CreateSourceInput,
): Promise<InboundSource & { secret: string }> {
  requireScope(access, 'webhooks:write');
  const name = checkName(input.name);
  const carrierCode = checkCarrier(input.carrier_code);
  const mode = access.livemode ? 'live' : 'test';
  if (input.mode !== undefined && input.mode !== mode) {
    throw validationError(
      [{ path: '/mode', message: `a ${mode} token creates ${mode} sources` }],
      `mode must be ${mode}, the mode of this token`,
      422,
    );
  }
  const customerAccountId = await merchantOf(ctx, access, input.customer_account_id);
  const { secret, secret_sealed } = newSealedSecret(ctx);
  const now = ctx.clock.now();
  const row: InboundSourcesTable = {
    id: newId('ins'),
    tenant_id: access.tenantId,
    customer_account_id: customerAccountId,
    livemode: access.livemode,
    name,
    carrier_code: carrierCode,
    secret_sealed,
    previous_secret_sealed: null,
    previous_secret_expires_at: null,
    created_by: access.userId,
    created_at: now,
    updated_at: now,
  };
  await ctx.db.insertInto('inbound_sources').values(row).execute();
  return { ...presentSource(ctx, row), secret };
}

export async function listSources(
  ctx: AppContext,
  access: TenantAccess,
  page: PageRequest,
): Promise<Page<InboundSource>> {
  requireScope(access, 'webhooks:write');
  let query = ctx.db
    .selectFrom('inbound_sources')
    .selectAll()
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode);
  if (access.customerAccountId) query = query.where('customer_account_id', '=', access.customerAccountId);
  return newestFirst(query, 'inbound_sources', page, (row) => presentSource(ctx, row));
}

export async function getSource(ctx: AppContext, access: TenantAccess, id: string): Promise<InboundSource> {
  requireScope(access, 'webhooks:write');
  return presentSource(ctx, await findVisibleSource(ctx.db, access, id));
}

export async function updateSource(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
  input: UpdateSourceInput,
): Promise<InboundSource> {
  requireScope(access, 'webhooks:write');
  await findVisibleSource(ctx.db, access, id);
  const name = input.name === undefined ? undefined : checkName(input.name);
  const carrierCode = input.carrier_code === undefined ? undefined : checkCarrier(input.carrier_code);
  const row = await ctx.db
    .updateTable('inbound_sources')
    .set({
      ...(name !== undefined ? { name } : {}),
      ...(carrierCode !== undefined ? { carrier_code: carrierCode } : {}),
      updated_at: ctx.clock.now(),
    })
    .where('id', '=', id)
    .where('tenant_id', '=', access.tenantId)
    .returningAll()
    .executeTakeFirstOrThrow();
  return presentSource(ctx, row);
}

/** Deletes the source with its log; its URL then answers 404. */
export async function deleteSource(ctx: AppContext, access: TenantAccess, id: string): Promise<void> {
  requireScope(access, 'webhooks:write');
  await findVisibleSource(ctx.db, access, id);
  await ctx.db
    .deleteFrom('inbound_sources')
    .where('id', '=', id)
    .where('tenant_id', '=', access.tenantId)
    .execute();
}

/** A new secret; the old one still verifies for 24 h, so the carrier switches without a gap. */
export async function rotateSourceSecret(
  ctx: AppContext,
  access: TenantAccess,
  id: string,
): Promise<{ secret: string }> {
  requireScope(access, 'webhooks:write');
  const now = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    const current = await findVisibleSource(trx, access, id, { forUpdate: true });
    const { secret, columns } = rotatedSecretColumns(ctx, current.secret_sealed, now);
    await trx
      .updateTable('inbound_sources')
      .set({ ...columns, updated_at: now })
      .where('id', '=', id)
      .where('tenant_id', '=', access.tenantId)
      .execute();
    return { secret };
  });
}

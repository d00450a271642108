import type { AppContext } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { DAY } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { requireScope, type TenantAccess } from '../accounts/access.ts';
import type { CheckpointResult } from './receive.ts';
import { findVisibleSource } from './sources.ts';
import type { InboundMessageStatus, InboundMessagesTable } from './tables.ts';

/** One entry of a source's inbound log: what came, and what became of each checkpoint; no body. */
export interface InboundMessage {
  id: string;
  source_id: string;
  webhook_id: string | null;
  received_at: string;
  status: InboundMessageStatus;
  reason: string | null;
  results: CheckpointResult[];
}

export function presentMessage(row: InboundMessagesTable): InboundMessage {
  const results = typeof row.results === 'string' ? JSON.parse(row.results) : row.results;
  return {
    id: row.id,
    source_id: row.source_id,
    webhook_id: row.webhook_id,
    received_at: row.created_at.toISOString(),
    status: row.status,
    reason: row.reason,
    results: Array.isArray(results) ? (results as CheckpointResult[]) : [],
  };
}

/** The source's log, newest first. */
export async function listMessages(
  ctx: AppContext,
  access: TenantAccess,
  sourceId: string,
  page: PageRequest,
): Promise<Page<InboundMessage>> {
  requireScope(access, 'webhooks:write');
  const source = await findVisibleSource(ctx.db, access, sourceId);
  const query = ctx.db
    .selectFrom('inbound_messages')
    .selectAll()
    .where('tenant_id', '=', source.tenant_id)
    .where('source_id', '=', source.id);
  return newestFirst(query, 'inbound_messages', page, presentMessage);
}

export async function getMessage(
  ctx: AppContext,
  access: TenantAccess,
  sourceId: string,
  messageId: string,
): Promise<InboundMessage> {
  requireScope(access, 'webhooks:write');
  const source = await findVisibleSource(ctx.db, access, sourceId);
  const row = await ctx.db
    .selectFrom('inbound_messages')
    .selectAll()
    .where('tenant_id', '=', source.tenant_id)
    .where('source_id', '=', source.id)
    .where('id', '=', messageId)
    .executeTakeFirst();
  if (!row) throw new AppError('inbound_message.not_found');
  return presentMessage(row);
}

/** How long the inbound log keeps a message (a replay older than 5 minutes is refused anyway). */
export const INBOUND_LOG_DAYS = 30;

/** Housekeeping: messages older than INBOUND_LOG_DAYS leave the log. */
export async function purgeInboundLog(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .deleteFrom('inbound_messages')
    .where('created_at', '<', new Date(ctx.clock.now().getTime() - INBOUND_LOG_DAYS * DAY))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

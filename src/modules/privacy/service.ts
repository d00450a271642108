import { sql } from 'kysely';
import { type AppContext, runAfterCommit } from '../../context.ts';
import { newestFirst } from '../../db/paging.ts';
import { AppError, validationError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Page, PageRequest } from '../../lib/paging.ts';
import { requireRole } from '../accounts/companies.ts';
import { managesMembers } from '../accounts/roles.ts';
import { type AppEvent, enqueueAppEvents } from '../app-events/enqueue.ts';
import { installationReceives } from '../oauth/installation-grants.ts';
import { forgetRecipients } from '../recipients/erasure.ts';
import {
  messageDeliveries,
  REDACTED,
  REDACTED_DESTINATION,
  REDACTED_PROOF,
  redactCopies,
} from './erasure.ts';

/** Spec section 8: at most 500 shipment ids in one message; more go in several with one id. */
export const SHIPMENT_IDS_PER_MESSAGE = 500;

export type PrivacyRequestKind = 'data_request' | 'redact';

export { REDACTED } from './erasure.ts';

export interface PrivacyRequestInput {
  kind: PrivacyRequestKind;
  recipient: { email?: string | null; phone?: string | null };
}

export interface PrivacyMessage {
  app_id: string;
  installation_id: string;
  delivery_id: string;
  shipment_count: number;
  /** The delivery's status; `expired` once its history is past retention. */
  status: string;
}

export interface PrivacyRequest {
  id: string;
  tenant_id: string;
  kind: PrivacyRequestKind;
  recipient: { email: string | null; phone: string | null };
  /** `no_apps_to_tell` when no installed app can see the recipient's shipments; else from the messages. */
  status: 'no_apps_to_tell' | 'sending' | 'delivered' | 'failed';
  shipment_count: number;
  messages: PrivacyMessage[];
  created_at: string;
}

/** E-mails compare trimmed and lower-cased; phones by their digits (and a leading +). */
export function normalizeRecipient(input: PrivacyRequestInput['recipient']): {
  email: string | null;
  phone: string | null;
} {
  const email = input.email?.trim().toLowerCase() || null;
  const phone = input.phone ? input.phone.replace(/[\s().-]/g, '') || null : null;
  const errors = [];
  if (email !== null && (email.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email))) {
    errors.push({ path: '/recipient/email', message: 'is not an e-mail address' });
  }
  if (phone !== null && !/^\+?[0-9]{4,20}$/.test(phone)) {
    errors.push({ path: '/recipient/phone', message: 'is not a phone number' });
  }
  if (errors.length > 0) throw validationError(errors);
  if (email === null && phone === null) {
    throw new AppError(
      'privacy_request.invalid_recipient',
      'Give the recipient an e-mail, a phone, or both',
      {
        errors: [{ path: '/recipient', message: 'needs email or phone' }],
      },
    );
  }
  return { email, phone };
}

function statusOf(messages: readonly PrivacyMessage[]): PrivacyRequest['status'] {
  if (messages.length === 0) return 'no_apps_to_tell';
  if (messages.some((m) => m.status === 'failed' || m.status === 'cancelled')) return 'failed';
  if (messages.every((m) => m.status === 'succeeded')) return 'delivered';
  return 'sending';
}

/** The company's shipments of one recipient, by e-mail (case and spaces aside) or phone (digits). */
function recipientShipments(
  db: AppContext['db'],
  tenantId: string,
  recipient: { email: string | null; phone: string | null },
) {
  return db
    .selectFrom('shipments')
    .select([
      'id',
      'customer_account_id',
      'livemode',
      'recipient_name',
      'recipient_email',
      'recipient_phone',
      'tracking_number',
      'external_ref',
      'status',
    ])
    .where('tenant_id', '=', tenantId)
    .where((eb) =>
      eb.or([
        ...(recipient.email ? [eb(sql`lower(trim(recipient_email))`, '=', recipient.email)] : []),
        ...(recipient.phone
          ? [eb(sql`regexp_replace(recipient_phone, '[\\s().-]', '', 'g')`, '=', recipient.phone)]
          : []),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id');
}

export interface ErasurePreview {
  recipient: { email: string | null; phone: string | null };
  /** The shipments an erasure would change, live first: their recipient becomes [redacted]. */
  shipments: Array<{
    id: string;
    livemode: boolean;
    tracking_number: string;
    reference: string | null;
    status: string;
    recipient_name: string;
  }>;
}

/**
 * What an erasure of this recipient would change, changing nothing: the dashboard's second
 * question names these shipments (live ones first) before the person confirms.
 */
export async function previewErasure(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  input: { email?: string | null; phone?: string | null },
): Promise<ErasurePreview> {
  await requireRole(ctx, userId, tenantId, managesMembers);
  const recipient = normalizeRecipient(input);
  const rows = await recipientShipments(ctx.db, tenantId, recipient).limit(1000).execute();
  const shipments = rows
    .map((s) => ({
      id: s.id,
      livemode: s.livemode,
      tracking_number: s.tracking_number,
      reference: s.external_ref,
      status: s.status,
      recipient_name: s.recipient_name,
    }))
    .sort((a, b) => Number(b.livemode) - Number(a.livemode));
  return { recipient, shipments };
}

/**
 * Files a privacy request (spec 2.7, issue 8): finds the recipient's shipments in the company and
 * tells every installed app whose installation may read shipments now (decision 0024) and can see
 * at least one of them (a merchant
 * installation only its account's; apps act in live mode, so live shipments), with at most 500
 * ids a message. A redact request then replaces the recipient's personal data on every matching
 * shipment, in the same transaction: the messages carry only ids and the contact the company gave.
 * The erasure reaches every other copy too (erasure.ts): the shipments' event envelopes, earlier
 * privacy messages and requests about the contact. Its own record keeps the contact only as
 * `[redacted]`; the answer to the request that files it shows the contact given.
 */
export async function createPrivacyRequest(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  input: PrivacyRequestInput,
): Promise<PrivacyRequest> {
  await requireRole(ctx, userId, tenantId, managesMembers);
  const recipient = normalizeRecipient(input.recipient);
  const now = ctx.clock.now();
  const id = newId('prq');
  const erasing = input.kind === 'redact';
  await ctx.db.transaction().execute(async (trx) => {
    const shipments = await recipientShipments(trx, tenantId, recipient).forUpdate().execute();
    const type = input.kind === 'redact' ? 'customer.redact' : 'customer.data_request';
    // Only installations that may read the shipments now are told: grant in force (app not
    // suspended, approver still there) and shipments:read among its scopes in force (decision 0024).
    // The app's `/v1` installation only: its events URL is where privacy messages go, once per app
    // and company; an `/mcp` grant (an agent's, or a store app's second grant) is told nothing.
    const installations = await trx
      .selectFrom('installations')
      .select(['id', 'app_id', 'customer_account_id', 'livemode'])
      .where('tenant_id', '=', tenantId)
      .where('resource', '=', 'v1')
      .where(
        installationReceives(sql.ref('installations.id'), sql.val(type), sql.ref('installations.tenant_id')),
      )
      .orderBy('created_at')
      .execute();
    const events: AppEvent[] = [];
    const messages: Array<{ app_id: string; installation_id: string; shipment_count: number }> = [];
    for (const installation of installations) {
      // Only the shipments of the installation's own mode: a test grant never learns live ids.
      const visible = shipments
        .filter((s) => s.livemode === installation.livemode)
        .filter(
          (s) =>
            !installation.customer_account_id || s.customer_account_id === installation.customer_account_id,
        )
        .map((s) => s.id);
      for (let start = 0; start < visible.length; start += SHIPMENT_IDS_PER_MESSAGE) {
        const ids = visible.slice(start, start + SHIPMENT_IDS_PER_MESSAGE);
        events.push({
          appId: installation.app_id,
          type,
          tenantId,
          data: {
            privacy_request_id: id,
            installation_id: installation.id,
            customer_account_id: installation.customer_account_id,
            recipient,
            shipment_ids: ids,
            requested_at: now.toISOString(),
          },
        });
        messages.push({
          app_id: installation.app_id,
          installation_id: installation.id,
          shipment_count: ids.length,
        });
      }
    }
    await trx
      .insertInto('privacy_requests')
      .values({
        id,
        tenant_id: tenantId,
        kind: input.kind,
        recipient_email: erasing && recipient.email ? REDACTED : recipient.email,
        recipient_phone: erasing && recipient.phone ? REDACTED : recipient.phone,
        status: events.length === 0 ? 'no_apps_to_tell' : 'messages_queued',
        shipment_count: shipments.length,
        requested_by: userId,
        created_at: now,
        completed_at: events.length === 0 ? now : null,
      })
      .execute();
    const deliveryIds = await enqueueAppEvents(ctx, trx, events);
    if (deliveryIds.length > 0) {
      await trx
        .insertInto('privacy_request_messages')
        .values(
          messages.map((m, i) => ({
            ...m,
            privacy_request_id: id,
            tenant_id: tenantId,
            delivery_id: deliveryIds[i] as string,
          })),
        )
        .execute();
    }
    if (erasing && shipments.length > 0) {
      await trx
        .updateTable('shipments')
        .set({
          recipient_name: REDACTED,
          recipient_email: null,
          recipient_phone: null,
          destination: REDACTED_DESTINATION,
          proof_of_delivery: REDACTED_PROOF,
          updated_at: now,
        })
        // The company's own shard on Citus (a statement without it reaches every shard).
        .where('tenant_id', '=', tenantId)
        .where(
          'id',
          'in',
          shipments.map((s) => s.id),
        )
        .execute();
    }
    if (erasing) {
      await redactCopies(trx, {
        tenantId,
        shipmentIds: shipments.map((s) => s.id),
        recipient,
        traces: [
          ...shipments.flatMap((s) => [s.recipient_name, s.recipient_email ?? '', s.recipient_phone ?? '']),
          recipient.email ?? '',
          recipient.phone ?? '',
        ],
        exceptRequest: id,
      });
      // New tracking links (the old ones find nothing), queued e-mails gone, sent ones masked.
      await forgetRecipients(
        trx,
        tenantId,
        shipments.map((s) => s.id),
        now,
      );
    }
  });
  runAfterCommit(ctx);
  const filed = await getPrivacyRequest(ctx, userId, tenantId, id);
  return { ...filed, recipient };
}

type RequestRow = {
  id: string;
  tenant_id: string;
  kind: string;
  recipient_email: string | null;
  recipient_phone: string | null;
  shipment_count: number;
  created_at: Date;
};

async function present(ctx: AppContext, rows: readonly RequestRow[]): Promise<PrivacyRequest[]> {
  const ids = rows.map((row) => row.id);
  const sent =
    ids.length === 0
      ? []
      : await ctx.db
          .selectFrom('privacy_request_messages as m')
          .select([
            'm.privacy_request_id',
            'm.app_id',
            'm.installation_id',
            'm.delivery_id',
            'm.shipment_count',
          ])
          .where('m.privacy_request_id', 'in', ids)
          .execute();
  const deliveries = await messageDeliveries(ctx.db, sent);
  const messages = sent.map((m) => ({
    ...m,
    status: m.delivery_id ? (deliveries.get(m.delivery_id)?.status ?? null) : null,
  }));
  return rows.map((row) => {
    const own = messages
      .filter((m) => m.privacy_request_id === row.id)
      .map((m) => ({
        app_id: m.app_id,
        installation_id: m.installation_id,
        delivery_id: m.delivery_id,
        shipment_count: m.shipment_count,
        status: m.status ?? 'expired',
      }));
    return {
      id: row.id,
      tenant_id: row.tenant_id,
      kind: row.kind as PrivacyRequestKind,
      recipient: { email: row.recipient_email, phone: row.recipient_phone },
      status: statusOf(own),
      shipment_count: row.shipment_count,
      messages: own,
      created_at: row.created_at.toISOString(),
    };
  });
}

export async function getPrivacyRequest(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  requestId: string,
): Promise<PrivacyRequest> {
  await requireRole(ctx, userId, tenantId, managesMembers);
  const row = await ctx.db
    .selectFrom('privacy_requests')
    .selectAll()
    .where('id', '=', requestId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw new AppError('privacy_request.not_found');
  const [presented] = await present(ctx, [row]);
  return presented as PrivacyRequest;
}

export async function listPrivacyRequests(
  ctx: AppContext,
  userId: string,
  tenantId: string,
  page: PageRequest = {},
): Promise<Page<PrivacyRequest>> {
  await requireRole(ctx, userId, tenantId, managesMembers);
  const rows = await newestFirst(
    ctx.db.selectFrom('privacy_requests').selectAll().where('tenant_id', '=', tenantId),
    'privacy_requests',
    page,
    (row) => row,
  );
  return { next_cursor: rows.next_cursor, data: await present(ctx, rows.data) };
}

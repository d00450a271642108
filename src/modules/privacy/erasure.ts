import { sql } from 'kysely';
import type { AppContext, Trx } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import type { BackgroundJob } from '../../jobs.ts';
import { MINUTE } from '../../lib/clock.ts';

/** What replaces a redacted recipient's personal data (shipments, envelopes, privacy records). */
export const REDACTED = '[redacted]';

/** The shipment fields that hold a recipient's personal data, and what each becomes. */
const SHIPMENT_FIELDS: Record<string, string | null> = {
  recipient_name: REDACTED,
  recipient_email: null,
  recipient_phone: null,
};

/**
 * A shipment's destination with its street line (personal data, issue 51) redacted; the city,
 * region, postal code and country stay (they place the parcel, not the person).
 */
export const REDACTED_DESTINATION = sql<string>`CASE WHEN destination->>'line1' IS NOT NULL
  THEN jsonb_set(destination, '{line1}', ${JSON.stringify(REDACTED)}::jsonb) ELSE destination END`;

/** Who signed for the parcel (often the recipient, or a neighbour named) is erased with them. */
export const REDACTED_PROOF = sql<string>`CASE WHEN proof_of_delivery->>'signed_by' IS NOT NULL
  THEN jsonb_set(proof_of_delivery, '{signed_by}', ${JSON.stringify(REDACTED)}::jsonb) ELSE proof_of_delivery END`;

/** Rows rewritten per statement. */
const CHUNK = 500;

/**
 * A copy of `value` with every shipment's personal fields redacted, at any depth (an envelope's
 * `data.shipment`, and whatever else a later event type nests a shipment in). Key order is kept,
 * so the envelope reads as before but for those values.
 */
function redactShipmentFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactShipmentFields);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (key === 'destination' && field && typeof field === 'object' && 'line1' in field) {
      // A destination's street line (message version 2026-12-01), when there is one.
      out[key] = { ...field, line1: field.line1 === null ? null : REDACTED };
      continue;
    }
    if (key === 'proof_of_delivery' && field && typeof field === 'object' && 'signed_by' in field) {
      out[key] = { ...field, signed_by: field.signed_by === null ? null : REDACTED };
      continue;
    }
    out[key] = Object.hasOwn(SHIPMENT_FIELDS, key) ? SHIPMENT_FIELDS[key] : redactShipmentFields(field);
  }
  return out;
}

type PrivacyContact = { email?: string | null; phone?: string | null };

/** An app event's `data.recipient` with the given contact replaced (spec 2.7's privacy messages). */
function redactPrivacyRecipient(payload: string): string {
  const envelope = JSON.parse(payload) as { data?: { recipient?: Record<string, unknown> } };
  const recipient = envelope.data?.recipient;
  if (!recipient || typeof recipient !== 'object') return payload;
  for (const key of ['email', 'phone']) {
    if (recipient[key] !== null && recipient[key] !== undefined) recipient[key] = REDACTED;
  }
  return JSON.stringify(envelope);
}

async function rewrite(
  trx: Trx,
  table: 'events' | 'webhook_deliveries',
  rows: ReadonlyArray<{ id: string; tenantId: string; payload: string }>,
  column: 'payload' | 'latest_payload' = 'payload',
): Promise<void> {
  // Company by company: on Citus each statement runs in that company's shard.
  for (const tenantId of new Set(rows.map((row) => row.tenantId))) {
    const own = rows.filter((row) => row.tenantId === tenantId);
    for (let start = 0; start < own.length; start += CHUNK) {
      const chunk = own.slice(start, start + CHUNK);
      const values = sql.join(chunk.map((row) => sql`(${row.id}, ${row.payload})`));
      await sql`UPDATE ${sql.table(table)} AS t SET ${sql.id(column)} = v.payload
        FROM (VALUES ${values}) AS v(id, payload) WHERE t.id = v.id AND t.tenant_id = ${tenantId}`.execute(
        trx,
      );
    }
  }
}

/**
 * The deliveries of privacy messages, by id. A message's delivery is its app's (an app's events
 * target is a tenant of its own, decision 0074): read by its key, not joined with the message,
 * since on Citus the two sit in different shards.
 */
export async function messageDeliveries(
  db: Db,
  messages: ReadonlyArray<{ delivery_id: string | null; app_id: string }>,
): Promise<Map<string, { tenant_id: string; status: string; payload: string | null }>> {
  const ids = messages.flatMap((message) => (message.delivery_id ? [message.delivery_id] : []));
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'tenant_id', 'status', 'payload'])
    .where('tenant_id', 'in', [...new Set(messages.map((message) => message.app_id))])
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map(({ id, ...delivery }) => [id, delivery]));
}

/**
 * Redacts, in the erasure's transaction, every stored copy of the recipient's data besides the
 * shipments themselves (issue 22 item 1, decision 0022):
 *
 * - the envelopes of the shipments' events, which their deliveries read when shown, sent, retried
 *   and replayed (a shipment event's delivery holds no copy of its own since migration 0031);
 * - the privacy messages (customer.data_request, customer.redact) of earlier requests about the
 *   same contact, which app events keep in their deliveries;
 * - the earlier privacy requests about that contact;
 * - the heads of answers, kept with each attempt, of those messages' receivers that sent back what
 *   they were sent (an echo), where they name the person: they become `[redacted]`.
 *
 * `exceptRequest` is the erasure being filed: its own messages must still name the contact, so
 * that the apps can find the person.
 */
export async function redactCopies(
  trx: Trx,
  input: {
    tenantId: string;
    shipmentIds: readonly string[];
    recipient: { email: string | null; phone: string | null };
    /** The shipments' details as they were: the forms in which an answer may have echoed them. */
    traces: readonly string[];
    exceptRequest: string;
  },
): Promise<void> {
  const deliveryIds: string[] = [];
  for (let start = 0; start < input.shipmentIds.length; start += CHUNK) {
    const ids = input.shipmentIds.slice(start, start + CHUNK);
    const events = await trx
      .selectFrom('events')
      .select(['id', 'payload', 'latest_payload', 'created_at'])
      .where('shipment_id', 'in', ids)
      .where('tenant_id', '=', input.tenantId)
      .execute();
    // Each version of the events: 2026-12-01's is what the deliveries of targets pinned to it send (migration 0097).
    for (const column of ['payload', 'latest_payload'] as const) {
      await rewrite(
        trx,
        'events',
        events.flatMap((event) => {
          const payload = event[column];
          return payload
            ? [
                {
                  id: event.id,
                  tenantId: input.tenantId,
                  payload: JSON.stringify(redactShipmentFields(JSON.parse(payload))),
                },
              ]
            : [];
        }),
        column,
      );
    }
    const deliveries = await deliveriesOf(trx, input.tenantId, events);
    deliveryIds.push(...deliveries.map((delivery) => delivery.id));
    // A delivery holds a copy of its own only if written before migration 0016 and not reached by
    // 0031 (a copy that differs from its event's): it is what that delivery sends.
    await rewrite(
      trx,
      'webhook_deliveries',
      deliveries.flatMap((delivery) =>
        delivery.payload === null
          ? []
          : [
              {
                id: delivery.id,
                tenantId: input.tenantId,
                payload: JSON.stringify(redactShipmentFields(JSON.parse(delivery.payload))),
              },
            ],
      ),
    );
  }

  const { email, phone } = input.recipient;
  const earlier = await trx
    .selectFrom('privacy_requests')
    .select('id')
    .where('tenant_id', '=', input.tenantId)
    .where('id', '<>', input.exceptRequest)
    .where((eb) =>
      eb.or([
        ...(email ? [eb('recipient_email', '=', email)] : []),
        ...(phone ? [eb('recipient_phone', '=', phone)] : []),
      ]),
    )
    .execute();
  if (earlier.length === 0) {
    await redactEchoes(trx, deliveryIds, input.traces);
    return;
  }
  const requestIds = earlier.map((row) => row.id);
  // The messages' deliveries are their apps' (an app's events target is a tenant of its own,
  // decision 0074): read by their keys, not joined, since on Citus they sit in other shards.
  const sent = await trx
    .selectFrom('privacy_request_messages')
    .select(['delivery_id', 'app_id'])
    .where('tenant_id', '=', input.tenantId)
    .where('privacy_request_id', 'in', requestIds)
    .execute();
  const messages = [...(await messageDeliveries(trx, sent))].flatMap(([id, delivery]) =>
    delivery.payload === null ? [] : [{ id, tenant_id: delivery.tenant_id, payload: delivery.payload }],
  );
  await rewrite(
    trx,
    'webhook_deliveries',
    messages.map((message) => ({
      id: message.id,
      tenantId: message.tenant_id,
      payload: redactPrivacyRecipient(message.payload),
    })),
  );
  await trx
    .updateTable('privacy_requests')
    .set((eb) => ({
      recipient_email: eb.case().when('recipient_email', 'is not', null).then(REDACTED).else(null).end(),
      recipient_phone: eb.case().when('recipient_phone', 'is not', null).then(REDACTED).else(null).end(),
    }))
    .where('tenant_id', '=', input.tenantId)
    .where('id', 'in', requestIds)
    .execute();
  deliveryIds.push(...messages.map((message) => message.id));
  await redactEchoes(trx, deliveryIds, input.traces);
}

/**
 * The deliveries of some events of a company: by its targets and the events' time (an index), as
 * a delivery is made with its event (there is no index by event).
 */
async function deliveriesOf(
  trx: Trx,
  tenantId: string,
  events: ReadonlyArray<{ id: string; created_at: Date }>,
): Promise<Array<{ id: string; payload: string | null }>> {
  if (events.length === 0) return [];
  const since = new Date(Math.min(...events.map((event) => event.created_at.getTime())));
  const rows = await trx
    .selectFrom('webhook_deliveries')
    .select(['id', 'payload'])
    .where('tenant_id', '=', tenantId)
    .where('endpoint_id', 'in', (eb) =>
      eb.selectFrom('webhook_endpoints').select('id').where('tenant_id', '=', tenantId),
    )
    .where('created_at', '>=', since)
    .where(
      'event_id',
      'in',
      events.map((event) => event.id),
    )
    .execute();
  return rows;
}

/** Answers kept with these deliveries' attempts that contain any of `traces` become `[redacted]`. */
async function redactEchoes(
  trx: Trx,
  deliveryIds: readonly string[],
  traces: readonly string[],
): Promise<void> {
  const needles = [...new Set(traces.filter((trace) => trace.length >= 3))];
  if (deliveryIds.length === 0 || needles.length === 0) return;
  const found = (column: string) =>
    sql.join(
      needles.map((needle) => sql`position(convert_to(${needle}, 'UTF8') in ${sql.ref(column)}) > 0`),
      sql` OR `,
    );
  for (let start = 0; start < deliveryIds.length; start += CHUNK) {
    const ids = deliveryIds.slice(start, start + CHUNK);
    await sql`UPDATE webhook_attempts SET response_body = convert_to(${REDACTED}, 'UTF8')
      WHERE delivery_id IN (${sql.join(ids)}) AND response_body IS NOT NULL AND (${found('response_body')})`.execute(
      trx,
    );
    // A first attempt that succeeded is kept in its delivery (migration 0065).
    await sql`UPDATE webhook_deliveries SET first_attempt_body = convert_to(${REDACTED}, 'UTF8')
      WHERE id IN (${sql.join(ids)}) AND first_attempt_body IS NOT NULL AND (${found('first_attempt_body')})`.execute(
      trx,
    );
  }
}

/** Erasures looked at per run of the job (the oldest open ones first). */
const OPEN_ERASURES_PER_RUN = 100;

/**
 * An erasure's own messages (customer.redact) name the contact so that each app can find the
 * person; once a message has reached its app, its stored copy names them no more (a replay sends
 * `[redacted]`). One not delivered keeps it, for a retry or a replay, until the history's 30 days
 * take it. The erasure is complete once none of its messages holds the contact.
 */
export async function forgetToldContacts(ctx: AppContext): Promise<{ redacted: number; completed: number }> {
  const open = await ctx.db
    .selectFrom('privacy_requests')
    .select(['id', 'tenant_id'])
    .where('kind', '=', 'redact')
    .where('completed_at', 'is', null)
    .orderBy('created_at')
    .limit(OPEN_ERASURES_PER_RUN)
    .execute();
  let redacted = 0;
  let completed = 0;
  for (const { id, tenant_id: tenantId } of open) {
    await ctx.db.transaction().execute(async (trx) => {
      const sent = await trx
        .selectFrom('privacy_request_messages')
        .select(['delivery_id', 'app_id'])
        .where('tenant_id', '=', tenantId)
        .where('privacy_request_id', '=', id)
        .execute();
      const deliveries = await messageDeliveries(trx, sent);
      const messages = sent.map((message) => {
        const delivery = message.delivery_id ? deliveries.get(message.delivery_id) : undefined;
        return {
          delivery_id: message.delivery_id as string,
          tenant_id: delivery?.tenant_id ?? '',
          status: delivery?.status ?? null,
          payload: delivery?.payload ?? null,
        };
      });
      const rewritten: Array<{ id: string; tenantId: string; payload: string }> = [];
      const traces: string[] = [];
      let holding = 0;
      for (const message of messages) {
        if (message.status === null || message.payload === null) continue;
        if (message.status !== 'succeeded') {
          holding += 1;
          continue;
        }
        const payload = redactPrivacyRecipient(message.payload);
        if (payload === message.payload) continue;
        rewritten.push({ id: message.delivery_id, tenantId: message.tenant_id, payload });
        const { email, phone } = (JSON.parse(message.payload) as { data: { recipient: PrivacyContact } }).data
          .recipient;
        traces.push(email ?? '', phone ?? '');
      }
      await rewrite(trx, 'webhook_deliveries', rewritten);
      await redactEchoes(
        trx,
        rewritten.map((message) => message.id),
        traces,
      );
      redacted += rewritten.length;
      if (holding === 0) {
        await trx
          .updateTable('privacy_requests')
          .set({ completed_at: ctx.clock.now() })
          .where('id', '=', id)
          .execute();
        completed += 1;
      }
    });
  }
  return { redacted, completed };
}

/** Housekeeping: what erasures told the apps stops naming the person once it has reached them. */
export const erasureMessagesJob: BackgroundJob = {
  name: 'erasure-messages',
  everyMs: 5 * MINUTE,
  run: forgetToldContacts,
};

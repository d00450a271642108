import { type RawBuilder, sql } from 'kysely';
import type { DeliveryContext } from './context.ts';
import { customHeaders, maskedValue } from './headers.ts';
import type { OutgoingMessage, SendResult } from './sender.ts';
import { secretsForSigning, signatureHeader } from './signing.ts';
import type { DeliveryTargetsView, WebhookDeliveriesTable } from './tables.ts';

/** The target columns a send needs (delivery_targets: an endpoint or an app's events URL). */
export type SendingEndpoint = Pick<
  DeliveryTargetsView,
  'id' | 'url' | 'secret_sealed' | 'previous_secret_sealed' | 'previous_secret_expires_at'
> &
  Partial<Pick<DeliveryTargetsView, 'headers_sealed'>>;

export type SendingDelivery = Pick<
  WebhookDeliveriesTable,
  | 'id'
  | 'tenant_id'
  | 'endpoint_id'
  | 'event_id'
  | 'event_type'
  | 'status'
  | 'attempt_count'
  | 'next_attempt_at'
> & { payload: string };

/**
 * The payload a delivery sends, in a query over `webhook_deliveries AS <alias>`: its own, or its
 * event's (a shipment event's deliveries hold none; migration 0016) in the delivery's version
 * (migration 0097).
 */
export function deliveryPayload(alias: string): RawBuilder<string> {
  const ref = (column: string) => sql.ref(`${alias}.${column}`);
  return sql<string>`COALESCE(${ref('payload')}, (SELECT CASE WHEN ${ref('api_version')} IS NULL THEN ev.payload ELSE ev.latest_payload END FROM events ev WHERE ev.id = ${ref('event_id')} AND ev.tenant_id = ${ref('tenant_id')}))`;
}

export function userAgent(ctx: DeliveryContext): string {
  return `Waybill-Webhooks/1.0 (+${ctx.config.webUrl}/docs/webhooks)`;
}

/**
 * The message of spec 2.6: the stored payload is the body, byte for byte, and is what is signed;
 * webhook-id is the event id, so every attempt and replay of one event carries the same id. The
 * endpoint's custom headers go first and Waybill's own after them: none of them can be replaced.
 */
export function buildMessage(
  ctx: DeliveryContext,
  delivery: SendingDelivery,
  endpoint: SendingEndpoint,
  now: Date,
): OutgoingMessage {
  const timestamp = Math.floor(now.getTime() / 1000);
  const secrets = secretsForSigning(ctx, endpoint, now);
  const custom = customHeaders(ctx, endpoint.headers_sealed);
  return {
    url: endpoint.url ?? '',
    body: delivery.payload,
    ...(custom.length > 0 ? { custom: custom.map(([name]) => name) } : {}),
    headers: {
      ...Object.fromEntries(custom),
      'content-type': 'application/json',
      'user-agent': userAgent(ctx),
      'webhook-id': delivery.event_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, delivery.event_id, timestamp, delivery.payload),
      'webhook-event': delivery.event_type,
    },
  };
}

/**
 * The headers as stored with the attempt: the signature is kept, it proves nothing without the
 * secret; custom headers that carry credentials are kept masked, as the API shows them.
 */
export function storedHeaders(message: OutgoingMessage): Record<string, string> {
  const stored = { ...message.headers };
  for (const name of message.custom ?? []) {
    const value = stored[name];
    if (value !== undefined) stored[name] = maskedValue(name, value);
  }
  return stored;
}

/** Shorter values are not looked for in answers: they would match ordinary text. */
const SHORTEST_ECHO = 6;

/**
 * The answer as it is stored and shown (attempt log, test send): custom header values that are
 * credentials, when the receiver echoed them back (as is, or escaped in JSON), are masked as they
 * are when read (issue 30 item 3), so that webhooks:read does not reveal what only the endpoint's
 * settings hold. The head is cut at 4 KB: a value cut there is masked too.
 */
export function withEchoesMasked(message: OutgoingMessage, result: SendResult): SendResult {
  const head = result.response_head;
  if (!message.custom || head === null || head.length === 0) return result;
  // Bytes as latin1 text, one character per byte: values are ASCII, so they match byte for byte.
  let text = head.toString('latin1');
  for (const name of message.custom) {
    const value = message.headers[name];
    if (value === undefined || value.length < SHORTEST_ECHO) continue;
    const masked = maskedValue(name, value);
    if (masked === value) continue;
    const replacement = Buffer.from(masked, 'utf8').toString('latin1');
    for (const form of new Set([value, JSON.stringify(value).slice(1, -1)])) {
      text = text.split(form).join(replacement);
      for (let cut = form.length - 1; cut >= SHORTEST_ECHO; cut--) {
        if (text.endsWith(form.slice(0, cut))) {
          text = text.slice(0, text.length - cut) + replacement;
          break;
        }
      }
    }
  }
  const masked = Buffer.from(text, 'latin1');
  return masked.equals(head) ? result : { ...result, response_head: masked };
}

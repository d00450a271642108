import type { Page } from '../../lib/paging.ts';
import { type FieldError, type FormRetry, fieldMessage, invalidAttrs, typedValue } from '../../web/fields.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { confirmLink } from '../../web/pages/confirm.ts';
import { timeTag } from '../../web/time.ts';
import { attemptAnswer } from './attempt-words.ts';
import { MAX_CUSTOM_HEADERS, RATE_LIMIT_MAX } from './controls.ts';
import type { Delivery, DeliveryDetail, DeliveryStatus } from './deliveries.ts';
import { DELIVERY_STATUSES } from './deliveries.ts';
import type { WebhookEndpoint } from './endpoints.ts';
import { EVENT_TYPES } from './event-types.ts';
import { failingWarning, healthCard, percent } from './pages-health.ts';
import type { EndpointHealth, EndpointStats } from './stats.ts';

/** A receiver's answer as shown to people: control characters (NUL included) as their visible symbols. */
export function printable(text: string | null): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters replaced
  return (text ?? '').replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, (c) =>
    String.fromCharCode(0x2400 + c.charCodeAt(0)),
  );
}

/** Why an endpoint is off, in words. */
const DISABLED_WORDS: Record<NonNullable<WebhookEndpoint['disabled_reason']>, string> = {
  gone: 'Disabled: the receiver answered 410 Gone',
  failing: 'Disabled: deliveries failed for 3 days',
  manual: 'Disabled by hand',
};

/** Why an app's endpoint receives nothing (decision 0024), in words. */
const HELD_WORDS: Record<NonNullable<WebhookEndpoint['held_reason']>, string> = {
  app_suspended: 'Receives nothing: the app is suspended',
  needs_approval:
    'Receives nothing: the person who approved the app left or lost the role; approve the app again',
};

/** An installation's endpoint held, or limited by the app's grant, as a note after its status. */
function grantNote(endpoint: WebhookEndpoint): SafeHtml | string {
  if (endpoint.held_reason) {
    return html`<br><span class="badge bad" data-held-reason="${endpoint.held_reason}">${HELD_WORDS[endpoint.held_reason]}</span>`;
  }
  if (endpoint.withheld_event_types.length > 0) {
    return html`<br><span class="muted">Not sent here (the app's grant does not allow them now): ${endpoint.withheld_event_types.join(', ')}</span>`;
  }
  return '';
}

export function statusBadge(endpoint: WebhookEndpoint): SafeHtml {
  if (endpoint.enabled) return html`<span class="badge ok">Enabled</span>${grantNote(endpoint)}`;
  const words = endpoint.disabled_reason ? DISABLED_WORDS[endpoint.disabled_reason] : 'Disabled';
  return html`<span class="badge bad">${words}</span>${grantNote(endpoint)}`;
}

function deliveryBadge(status: DeliveryStatus): SafeHtml {
  const kind = status === 'succeeded' ? 'ok' : status === 'pending' ? '' : 'bad';
  return html`<span class="badge ${kind}">${status}</span>`;
}

export function endpointList(
  endpoints: Page<WebhookEndpoint>,
  livemode: boolean,
  health: ReadonlyMap<string, EndpointHealth>,
  now: Date,
): SafeHtml {
  const rows = endpoints.data.map((e) => {
    const h = health.get(e.id);
    return html`<tr>
<td><a href="/dashboard/webhooks/${e.id}">${e.url}</a>${e.description ? html`<br><span class="muted">${e.description}</span>` : ''}</td>
<td>${e.event_types.join(', ')}</td>
<td>${statusBadge(e)}${h ? html`<br>${failingWarning(h, now)}` : ''}</td>
<td>${h ? percent(h.success_rate) : ''}</td>
</tr>`;
  });
  return html`<h1>Webhooks</h1>
<p class="muted">Signed messages about your ${livemode ? 'live' : 'test'} shipments, sent to your URLs.
<a href="/docs/webhooks">How to receive them</a>.</p>
<p><a class="button" href="/dashboard/webhooks/new">Add an endpoint</a></p>
${
  endpoints.data.length === 0
    ? html`<p class="card muted">No ${livemode ? 'live' : 'test'} endpoints yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th>URL</th><th>Events</th><th>Status</th><th>Success (24 h)</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
}
${endpoints.next_cursor ? html`<p><a href="/dashboard/webhooks?cursor=${endpoints.next_cursor}">More</a></p>` : ''}`;
}

export interface EndpointForm {
  url: string;
  /** The destination kind (`https`, `rabbitmq`, `nats`) and a broker's exchange, routing key or subject. */
  kind?: string;
  exchange?: string;
  routing_key?: string;
  subject?: string;
  description: string;
  event_types: string[];
  livemode: boolean;
}

const DESTINATION_KINDS: ReadonlyArray<[string, string]> = [
  ['https', 'HTTPS (webhook)'],
  ['rabbitmq', 'RabbitMQ exchange'],
  ['nats', 'NATS JetStream subject'],
];

/** Where an endpoint's messages go, as its page says it: a broker's password is masked already. */
function destinationLine(endpoint: WebhookEndpoint): SafeHtml {
  const d = endpoint.destination;
  if (d.type === 'https') return html`<p><code>${endpoint.url}</code></p>`;
  const where =
    d.type === 'rabbitmq'
      ? html`exchange <code>${d.exchange ?? ''}</code>, routing key <code>${d.routing_key ?? ''}</code>`
      : html`subject <code>${d.subject ?? ''}</code>`;
  return html`<p><span class="badge">${d.type === 'rabbitmq' ? 'RabbitMQ' : 'NATS JetStream'}</span> <code>${d.url}</code>, ${where}</p>`;
}

export function newEndpointForm(csrf: string, form: EndpointForm, errors: FieldError[] = []): SafeHtml {
  const input = (name: 'exchange' | 'routing_key' | 'subject', label: string, placeholder = '') =>
    html`<label>${label} <input name="${name}" maxlength="255" value="${form[name] ?? ''}"${placeholder ? html` placeholder="${placeholder}"` : ''}${invalidAttrs(errors, name)}>${fieldMessage(errors, name)}</label>`;
  return html`<h1>Add a webhook endpoint</h1>
<form class="stack card" method="post" action="/dashboard/webhooks">
${csrfField(csrf)}
<fieldset><legend>Destination</legend>
<label>Kind <select name="destination_type">
${DESTINATION_KINDS.map(
  ([value, label]) =>
    html`<option value="${value}"${(form.kind ?? 'https') === value ? html` selected` : ''}>${label}</option>`,
)}
</select></label>
<label>URL <input type="url" name="url" required maxlength="2048" value="${form.url}" placeholder="https://example.com/webhooks/waybill"${invalidAttrs(errors, 'url')}>${fieldMessage(errors, 'url')}</label>
<p class="muted">HTTPS: a public https:// URL. RabbitMQ: amqps://user:password@host:5671/vhost, with an exchange and a routing key. NATS: tls://user:password@host:4222, with a JetStream subject. <code>{event_type}</code> in a routing key or subject is the event's type.</p>
${input('exchange', 'Exchange (RabbitMQ)')}
${input('routing_key', 'Routing key (RabbitMQ)', 'shipments.{event_type}')}
${input('subject', 'Subject (NATS JetStream)', 'waybill.{event_type}')}
</fieldset>
<label>Description <input name="description" maxlength="500" value="${form.description}"${invalidAttrs(errors, 'description')}>${fieldMessage(errors, 'description')}</label>
<fieldset${invalidAttrs(errors, 'event_types')}><legend>Events</legend>${fieldMessage(errors, 'event_types')}
${EVENT_TYPES.map(
  (type) =>
    html`<label class="check"><input type="checkbox" name="event_types" value="${type}"${form.event_types.includes(type) ? html` checked` : ''}> ${type}</label>`,
)}
</fieldset>
<fieldset><legend>Shipments</legend>
<label class="check"><input type="radio" name="mode" value="live"${form.livemode ? html` checked` : ''}> Live shipments</label>
<label class="check"><input type="radio" name="mode" value="test"${form.livemode ? '' : html` checked`}> Test shipments</label>
</fieldset>
<button type="submit">Add endpoint</button>
</form>`;
}

export interface EndpointPageExtras {
  secret?: { value: string; note: string } | null;
  /** The delivery controls as typed and their errors, after a refusal. */
  retry?: FormRetry | null;
}

export interface EndpointHealthView {
  stats: EndpointStats;
  now: Date;
}

function actionButton(csrf: string, action: string, label: string, kind = 'secondary'): SafeHtml {
  return html`<form class="inline" method="post" action="${action}">${csrfField(csrf)}<button class="${kind}" type="submit">${label}</button></form>`;
}

function deliveryTable(
  endpoint: WebhookEndpoint,
  deliveries: Page<Delivery>,
  status: DeliveryStatus | undefined,
  now: Date,
): SafeHtml {
  const base = `/dashboard/webhooks/${endpoint.id}`;
  const rows = deliveries.data.map(
    (d) => html`<tr>
<td><a href="/dashboard/webhooks/deliveries/${d.id}">${d.event_type}</a><br><code class="muted">${d.event_id}</code></td>
<td>${deliveryBadge(d.status)}</td>
<td>${d.attempt_count}${d.last_status_code === null ? '' : ` (last ${d.last_status_code})`}</td>
<td>${timeTag(d.created_at, now)}</td>
</tr>`,
  );
  const more = deliveries.next_cursor
    ? html`<p><a href="${base}?${status ? `status=${status}&` : ''}cursor=${deliveries.next_cursor}">Older deliveries</a></p>`
    : '';
  return html`<section aria-label="Deliveries">
<h2>Deliveries</h2>
<form class="inline" method="get" action="${base}">
<label class="check">Status <select name="status">
<option value="">Any</option>
${DELIVERY_STATUSES.map((s) => html`<option value="${s}"${s === status ? html` selected` : ''}>${s}</option>`)}
</select></label>
<button class="secondary" type="submit">Filter</button>
</form>
${
  deliveries.data.length === 0
    ? html`<p class="muted">No deliveries${status ? ` with status ${status}` : ''}.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th>Event</th><th>Status</th><th>Attempts</th><th>Created</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
}
${more}
</section>`;
}

/** The receiver's delivery controls (CONTRACT.md): shown, and set by one form. */
function controlsCard(
  csrf: string,
  endpoint: WebhookEndpoint,
  now: Date,
  retry: FormRetry | null = null,
): SafeHtml {
  const base = `/dashboard/webhooks/${endpoint.id}`;
  const errors = retry?.errors ?? [];
  const paused =
    endpoint.paused_until && new Date(endpoint.paused_until).getTime() > now.getTime()
      ? html`<p><span class="badge bad">Paused until ${endpoint.paused_until}</span>
<span class="muted">The receiver answered 429 or 503 with Retry-After: nothing is sent before then, and what waits uses none of its attempts.</span></p>`
      : '';
  // As typed after a refusal, else as stored.
  const listOf = (name: string) => {
    const value = retry?.values[name];
    return Array.isArray(value) ? value : value === undefined ? [] : [value];
  };
  const headers: Array<[string, string]> = retry
    ? listOf('header_name').map((name, i): [string, string] => [name, listOf('header_value')[i] ?? ''])
    : Object.entries(endpoint.headers);
  const rate = retry
    ? typedValue(retry.values, 'rate_limit')
    : endpoint.rate_limit === null
      ? ''
      : String(endpoint.rate_limit);
  const ordering = retry ? typedValue(retry.values, 'ordering') : endpoint.ordering;
  const filled = headers.filter(([name, value]) => name !== '' || value !== '').length;
  const rows = Math.min(MAX_CUSTOM_HEADERS, Math.max(headers.length, filled + 2));
  const headerRows = Array.from({ length: rows }, (_, i) => {
    const [name, value] = headers[i] ?? ['', ''];
    return html`<tr>
<td><input name="header_name" maxlength="100" value="${name}" aria-label="Header name ${i + 1}" placeholder="X-Api-Key"></td>
<td><input name="header_value" maxlength="1000" value="${value}" aria-label="Header value ${i + 1}"></td>
</tr>`;
  });
  return html`<section class="card" aria-label="Delivery controls">
<h2>Delivery controls</h2>
${paused}
<form class="stack" method="post" action="${base}/controls">
${csrfField(csrf)}
<label>Rate limit (messages a second, in any one-second window; empty for none)
<input type="number" name="rate_limit" min="1" max="${RATE_LIMIT_MAX}" step="1" value="${rate}" placeholder="No limit"${invalidAttrs(errors, 'rate_limit')}>${fieldMessage(errors, 'rate_limit')}</label>
<label>Order <select name="ordering"${invalidAttrs(errors, 'ordering')}>
<option value="none"${ordering === 'none' ? html` selected` : ''}>None: messages go in parallel</option>
<option value="per_shipment"${ordering === 'per_shipment' ? html` selected` : ''}>Per shipment: one at a time, in event order</option>
</select>${fieldMessage(errors, 'ordering')}</label>
<fieldset name="headers"${invalidAttrs(errors, 'headers')}><legend>Custom headers (sent with every message; credentials are shown masked, and kept as they are when left masked)</legend>${fieldMessage(errors, 'headers')}
<div class="table-wrap"><table>
<thead><tr><th>Name</th><th>Value</th></tr></thead>
<tbody>${headerRows}</tbody></table></div>
<p class="muted">At most ${MAX_CUSTOM_HEADERS}. Empty a row to remove it. Names Waybill or HTTP sets (webhook-*, content-type, user-agent, host and the like) are refused.</p>
</fieldset>
<button type="submit">Save delivery controls</button>
</form>
</section>`;
}

export function endpointPage(
  csrf: string,
  endpoint: WebhookEndpoint,
  deliveries: Page<Delivery>,
  status: DeliveryStatus | undefined,
  extras: EndpointPageExtras,
  health: EndpointHealthView,
): SafeHtml {
  const base = `/dashboard/webhooks/${endpoint.id}`;
  return html`<h1>${endpoint.description ?? 'Webhook endpoint'}</h1>
<section class="card">
${destinationLine(endpoint)}
<p>${statusBadge(endpoint)} <span class="badge">${endpoint.livemode ? 'Live' : 'Test'}</span></p>
<p>Events: ${endpoint.event_types.join(', ')}</p>
<div class="row">
${
  endpoint.enabled
    ? actionButton(csrf, `${base}/disable`, 'Disable')
    : actionButton(csrf, `${base}/enable-and-replay`, 'Enable and replay what failed', '')
}
${actionButton(csrf, `${base}/test`, 'Send a test message')}
</div>
</section>
${healthCard(endpoint.id, health.stats, health.now)}
${controlsCard(csrf, endpoint, health.now, extras.retry ?? null)}
<section class="card" aria-label="Signing secret">
<h2>Signing secret</h2>
${
  extras.secret
    ? html`<code class="secret" id="secret">${extras.secret.value}</code><p class="muted">${extras.secret.note}</p>`
    : html`<p class="muted">Receivers verify every message with it (<a href="/docs/webhooks">how</a>).</p>`
}
<div class="row">
${actionButton(csrf, `${base}/secret`, 'Reveal secret')}
${confirmLink(`${base}/rotate-secret`, 'Rotate secret', 'secondary')}
</div>
</section>
${deliveryTable(endpoint, deliveries, status, health.now)}
<section class="card" aria-label="Delete">
${confirmLink(`${base}/delete`, 'Delete endpoint')}
</section>`;
}

export function deliveryPage(csrf: string, delivery: DeliveryDetail, now: Date): SafeHtml {
  const headers = Object.entries(delivery.message.headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  let body = delivery.message.body;
  try {
    body = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    // shown as stored
  }
  const attempts = delivery.attempts.map(
    (a) => html`<tr>
<td>${timeTag(a.attempted_at, now)}</td><td>${a.trigger}</td>
<td>${attemptAnswer(a)}</td><td>${a.duration_ms} ms</td>
<td><pre>${printable(a.response_body)}</pre></td>
</tr>`,
  );
  return html`<h1>${delivery.event_type}</h1>
<p><a href="/dashboard/webhooks/${delivery.endpoint_id}">Back to the endpoint</a></p>
<section class="card">
<p>${deliveryBadge(delivery.status)} ${delivery.attempt_count} attempt(s)${
    delivery.next_attempt_at ? html`, next at ${timeTag(delivery.next_attempt_at)}` : ''
  }</p>
<p>webhook-id <code>${delivery.event_id}</code></p>
${actionButton(csrf, `/dashboard/webhooks/deliveries/${delivery.id}/replay`, 'Replay now', '')}
</section>
<section class="card" aria-label="Message">
<h2>Message</h2>
<pre>${headers}</pre>
<pre>${body}</pre>
</section>
<section aria-label="Attempts">
<h2>Attempts</h2>
${
  delivery.attempts.length === 0
    ? html`<p class="muted">Not attempted yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th>When</th><th>Trigger</th><th>Answer</th><th>Took</th><th>Body (first 4 KB)</th></tr></thead>
<tbody>${attempts}</tbody></table></div>`
}
</section>`;
}

import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { userAgent } from '../../delivery/message.ts';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '../../delivery/schedule.ts';
import { DEADLINE_MS, RESPONSE_LIMIT } from '../../delivery/sender.ts';
import { HOUR, MINUTE, SECOND } from '../../lib/clock.ts';
import { html, type SafeHtml } from '../../web/html.ts';
import { layout, sendPage } from '../../web/layout.ts';
import { APP_EVENTS } from '../app-events/event-schemas.ts';
import { API_VERSION, DEPRECATED_VERSIONS, LATEST_API_VERSION } from '../shipments/events.ts';
import { EVENT_TYPES } from './event-types.ts';

function words(ms: number): string {
  if (ms >= HOUR) return `${ms / HOUR} h`;
  if (ms >= MINUTE) return `${ms / MINUTE} min`;
  return `${ms / SECOND} s`;
}

const WITH_PACKAGE = `// npm install standardwebhooks
import { Webhook } from 'standardwebhooks';

const wh = new Webhook(process.env.WAYBILL_WEBHOOK_SECRET); // "whsec_..."

// Express: keep the raw body; a re-serialised JSON body does not verify.
app.post('/webhooks/waybill', express.raw({ type: 'application/json' }), (req, res) => {
  let event;
  try {
    event = wh.verify(req.body.toString('utf8'), req.headers); // checks signature and 5-minute window
  } catch {
    return res.status(400).send('bad signature');
  }
  queue.add(event);            // do the work later
  res.status(204).end();       // answer at once
});`;

const BY_HAND = `import { createHmac, timingSafeEqual } from 'node:crypto';

const TOLERANCE_S = 5 * 60;

export function verifyWaybill(secret, headers, rawBody) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures || !/^\\d+$/.test(timestamp)) throw new Error('missing headers');
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_S) throw new Error('too old or too new');

  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(\`\${id}.\${timestamp}.\${rawBody}\`).digest();

  // During a rotation the header holds two signatures, space-separated: either may match.
  for (const entry of signatures.split(' ')) {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return JSON.parse(rawBody);
  }
  throw new Error('no signature matches');
}`;

const ORDERING = `// Messages can arrive twice and out of order.
async function handle(event) {
  if (await seen.has(event.id)) return;              // webhook-id === event.id: dedupe
  const { shipment, previous_status } = event.data;
  const mine = await db.shipments.get(shipment.id);
  // Apply only a change that follows what you have; never move a shipment back.
  if (mine && mine.updated_at >= shipment.updated_at) return;
  await db.shipments.put(shipment);
  await seen.add(event.id);
}`;

const GENERATE = (baseUrl: string) => `npx openapi-typescript ${baseUrl}/openapi.json -o waybill.ts`;

const TYPED = `import type { webhooks } from './waybill';

// One type per event type; WaybillEvent is their union, told apart by \`type\`.
type Body<T extends keyof webhooks> = webhooks[T]['post']['requestBody']['content']['application/json'];
type WaybillEvent = Body<keyof webhooks>;

function handle(event: WaybillEvent) {
  switch (event.type) {
    case 'shipment.delivered':
      return markDelivered(event.data.shipment.tracking_number); // typed: the Shipment schema
    case 'customer.redact':
      return forget(event.data.recipient);
  }
}`;

function guide(ctx: AppContext): SafeHtml {
  const schedule = RETRY_DELAYS_MS.map(words).join(', ');
  return html`<article class="card">
<h1>Receiving Waybill webhooks</h1>
<p>Waybill sends a signed <code>POST</code> to your endpoint for every shipment event you subscribe to
(${EVENT_TYPES.join(', ')}), and to an app's events URL its app events (${APP_EVENTS.map((e) => e.type).join(', ')}).
Messages follow <a href="https://www.standardwebhooks.com/">Standard Webhooks</a>.
Test mode endpoints get only sandbox shipments; the body's <code>livemode</code> says which.</p>

<h2>The message</h2>
<pre>POST /your/path
Content-Type: application/json
User-Agent: ${userAgent(ctx)}
webhook-id: evt_... (the event id; the same on every retry and replay)
webhook-timestamp: 1700000000 (Unix seconds)
webhook-signature: v1,BASE64 [v1,BASE64 during a rotation]
webhook-event: shipment.status_changed</pre>
<p>The body is the event: <code>id</code>, <code>type</code>, <code>api_version</code>, <code>created_at</code>,
<code>tenant_id</code>, <code>livemode</code>, <code>data</code> (<code>status</code>, <code>previous_status</code> and
<code>shipment</code>, as <code>GET /v1/shipments/{id}</code> returns it), and <code>test: true</code> on test messages.
Every type's body has a JSON Schema (draft 2020-12): see the event catalogue below.</p>

<h2>The event catalogue and your types</h2>
<p>Every message Waybill sends is valid against the schema of its type, published twice: with an example at
<code>GET /v1/webhook-event-types</code> (<code>{data: [{type, description, audience, schema, example}]}</code>), and as
the <code>webhooks</code> of the OpenAPI document, <a href="/openapi.json">/openapi.json</a>, which the
<a href="/docs">API reference</a> shows. Generate your receiver's types from the document with
<a href="https://openapi-ts.dev/">openapi-typescript</a>:</p>
<pre><code>${GENERATE(ctx.config.baseUrl)}</code></pre>
<pre><code>${TYPED}</code></pre>
<p>In other languages, any JSON Schema 2020-12 validator or generator reads the <code>schema</code> of each type. Schemas
are closed: a message has exactly the fields its schema lists.</p>
<p id="versions">The body's <code>api_version</code> names the set of schemas it was built with: ${API_VERSION} or
${LATEST_API_VERSION} (the latest, which adds the shipment's tracking fields and the types
<code>shipment.checkpoint_added</code>, <code>shipment.eta_changed</code> and <code>shipment.stalled</code>). Each
endpoint, app subscription and events URL is pinned to one (<code>api_version</code> on create and PATCH); the
schemas of a version do not change, and a new event type may appear within a version: answer <code>2xx</code> to a type
you do not handle. ${API_VERSION} is deprecated since ${DEPRECATED_VERSIONS[API_VERSION]?.deprecatedAt.toISOString().slice(0, 10)} and may be removed after
${DEPRECATED_VERSIONS[API_VERSION]?.sunsetAt.toISOString().slice(0, 10)}: a request with <code>Waybill-Version: ${API_VERSION}</code> is answered with
<code>Deprecation</code> and <code>Sunset</code> headers, and <code>GET /v1/webhook-endpoints?api_version=${API_VERSION}</code>
lists the endpoints still on it (each shows <code>api_version_sunset_at</code>).</p>

<h2>1. Verify every message</h2>
<p>Use the raw body exactly as received: parse it only after the signature matches.
With the <code>standardwebhooks</code> package (Node; it exists for other languages too):</p>
<pre><code>${WITH_PACKAGE}</code></pre>
<p>By hand: the signature is HMAC-SHA256 over <code>{webhook-id}.{webhook-timestamp}.{raw body}</code>, keyed with the
base64-decoded part of your secret after <code>whsec_</code>, sent as <code>v1,</code> + base64. Compare in constant
time, refuse timestamps more than 5 minutes from your clock, and accept any one of the space-separated signatures.</p>
<pre><code>${BY_HAND}</code></pre>

<h2>2. Rotating the secret</h2>
<p>After you rotate a secret in the dashboard or with <code>POST /v1/webhook-endpoints/{id}/rotate-secret</code>,
messages carry two signatures for 24 hours: one with the new secret and one with the previous one. Deploy the new
secret within that day; code that accepts any matching signature needs no change.</p>

<h2>3. Ignore repeats, expect any order</h2>
<p>Delivery is at least once: the same message may arrive twice. Keep the <code>webhook-id</code> values you have
handled and skip repeats. Messages may also arrive out of order: apply a change only when
<code>data.previous_status</code> matches what you stored, or when <code>data.shipment.updated_at</code> is newer than
yours, or read <code>GET /v1/shipments/{id}</code>. Never move a shipment back. Or set the endpoint's
<code>ordering</code> to <code>per_shipment</code>: one shipment's messages then come one at a time, in the order of
their events (the next once the one before succeeded, failed for good or was cancelled), while other shipments go
on in parallel; replays and test messages are outside that order.</p>
<pre><code>${ORDERING}</code></pre>

<h2>4. Answer fast</h2>
<p>Answer any 2xx within ${DEADLINE_MS / 1000} seconds; put the work on a queue and answer first. Anything else,
including a redirect (3xx, never followed), is a failure. Only the first ${RESPONSE_LIMIT / 1024} KB of your answer
is read and shown in the delivery log.</p>

<h2>5. Retries, replays and disabling</h2>
<p>A failed message is tried again after ${schedule}: ${MAX_ATTEMPTS} attempts in about 3 days, with a little
jitter. An endpoint that keeps failing for 3 days is disabled and its people get an e-mail. Answer
<code>410 Gone</code> to unsubscribe: the endpoint is disabled at once. After fixing a receiver, enable the endpoint
and replay what failed in the last 7 days (<code>POST /v1/webhook-endpoints/{id}/deliveries/replay</code>, or one
button in the dashboard); every delivery and attempt is kept 30 days.</p>

<h2>6. Your URL</h2>
<p>Endpoints are public <code>https://</code> URLs. Private, loopback and cloud metadata addresses are refused,
also when a public name later resolves to one. For local development, use a tunnel.</p>
</article>`;
}

/** The receiver's guide, a public page; a static route, so it wins over the API reference's /docs/*. */
export function webhookGuideRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/docs/webhooks', { schema: { hide: true } }, async (_request, reply) =>
      sendPage(reply, layout({ title: 'Receiving webhooks' }, guide(ctx))),
    );
  };
}

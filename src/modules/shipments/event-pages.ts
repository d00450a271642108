import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { type EventSummary, listEvents } from '../../modules/shipments/service.ts';
import { html } from '../../web/html.ts';
import { nextLink, timeTag } from '../../web/pages/common.ts';
import { pageGet } from '../../web/pages/page-routes.ts';

const EVENTS = '/dashboard/events';

function pretty(payload: string): string {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return payload;
  }
}

/**
 * Events newest first, each with its envelope (the bytes webhooks will carry) behind a
 * disclosure, so a long list stays readable on a phone. `openFirst` unfolds the newest one.
 */
export function eventRows(
  events: EventSummary[],
  options: { openFirst?: boolean; withShipment?: boolean; now?: Date } = {},
) {
  if (events.length === 0) return html`<p class="muted">No events yet.</p>`;
  return html`<ol class="events">${events.map(
    (event, i) => html`<li class="card">
<div class="event-head"><code class="event-type">${event.type}</code>${timeTag(event.created_at, options.now)}${
      options.withShipment && event.shipment_id
        ? html`<a href="/dashboard/shipments/${encodeURIComponent(event.shipment_id)}">Shipment</a>`
        : ''
    }</div>
<details${options.openFirst && i === 0 ? html` open` : ''}><summary>Payload <code>${event.id}</code></summary><pre>${pretty(event.payload)}</pre></details>
</li>`,
  )}</ol>`;
}

/** The events of the company (or merchant account) in the mode being viewed. */
export function eventPages(app: FastifyInstance, ctx: AppContext): void {
  pageGet(app, ctx, EVENTS, async (view, { query }) => {
    const page = await listEvents(ctx, view.access, { cursor: query.cursor?.slice(0, 200) });
    const body = html`<h1>Events</h1>
<p class="muted">Every shipment change writes events; webhook endpoints receive these same payloads.</p>
${eventRows(page.data, { withShipment: true, now: ctx.clock.now() })}
${nextLink(EVENTS, {}, page.next_cursor)}`;
    return { title: 'Events', path: EVENTS, body };
  });
}

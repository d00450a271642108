// The operational events in the catalogue: their schemas and examples. operational-events.ts sends
// them, apart from these, so that a worker does not load the schema library (issue 25 item 3).
import { Type } from 'typebox';
import { FAILING_DISABLE_MS, FAILING_NOTICE_MS } from '../../delivery/schedule.ts';
import { PrefixedId } from '../../http/schemas.ts';
import type { EventDefinition, ExampleContext } from './event-schema.ts';

const EndpointId = PrefixedId('we', 'The endpoint the event is about (never the one receiving it)');
const EndpointUrl = Type.String({ description: "The endpoint's URL" });
const At = (description: string) => Type.String({ format: 'date-time', description });

const FailingData = Type.Object(
  {
    endpoint_id: EndpointId,
    url: EndpointUrl,
    failing_since: At('When its current streak of failed attempts began (no 2xx since)'),
    disables_at: At('When the 3-day rule disables it if no 2xx comes back (failing_since + 3 days)'),
  },
  {
    $id: 'EndpointFailingData',
    additionalProperties: false,
    description: 'An endpoint failing for 24 hours',
  },
);
const DisabledData = Type.Object(
  {
    endpoint_id: EndpointId,
    url: EndpointUrl,
    reason: Type.Union([Type.Literal('gone'), Type.Literal('failing')], {
      description: '`gone`: it answered 410 Gone; `failing`: it failed for 3 days',
    }),
    disabled_at: At('When it was disabled'),
  },
  { $id: 'EndpointDisabledData', additionalProperties: false, description: 'An endpoint Waybill disabled' },
);
const RecoveredData = Type.Object(
  {
    endpoint_id: EndpointId,
    url: EndpointUrl,
    failing_since: At('When the streak that ended began'),
    recovered_at: At('When it answered 2xx again'),
  },
  {
    $id: 'EndpointRecoveredData',
    additionalProperties: false,
    description: 'A failing endpoint that answers again',
  },
);

const exampleAbout = {
  endpoint_id: 'we_example00000000000000000',
  url: 'https://example.com/webhooks/orders',
};
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * CONTRACT.md: the operational event types, which endpoints subscribe to like any other. They go to
 * the other endpoints of the owner (company, merchant account or installation) and mode.
 */
export const OPERATIONAL_EVENTS = [
  {
    type: 'webhook_endpoint.failing',
    sentTo: 'webhook_endpoints',
    description:
      'Another endpoint of yours has failed every attempt for 24 hours (sent once a streak). It is disabled at disables_at unless it answers 2xx before.',
    data: FailingData,
    example: (c: ExampleContext) => ({
      ...exampleAbout,
      failing_since: iso(c.at.getTime() - FAILING_NOTICE_MS),
      disables_at: iso(c.at.getTime() - FAILING_NOTICE_MS + FAILING_DISABLE_MS),
    }),
  },
  {
    type: 'webhook_endpoint.disabled',
    sentTo: 'webhook_endpoints',
    description:
      'Waybill disabled another endpoint of yours: it answered 410 Gone, or failed for 3 days. What waited for it is cancelled; enable it and replay.',
    data: DisabledData,
    example: (c: ExampleContext) => ({ ...exampleAbout, reason: 'failing', disabled_at: c.at.toISOString() }),
  },
  {
    type: 'webhook_endpoint.recovered',
    sentTo: 'webhook_endpoints',
    description: 'Another endpoint of yours that was told as failing answered 2xx again.',
    data: RecoveredData,
    example: (c: ExampleContext) => ({
      ...exampleAbout,
      failing_since: iso(c.at.getTime() - 2 * FAILING_NOTICE_MS),
      recovered_at: c.at.toISOString(),
    }),
  },
] as const satisfies readonly EventDefinition[];

export type OperationalEventType = (typeof OPERATIONAL_EVENTS)[number]['type'];

import { newId } from '../../lib/ids.ts';
import { APP_EVENTS } from '../app-events/event-schemas.ts';
import { SHIPMENT_EVENTS } from '../shipments/event-schemas.ts';
import { buildEnvelope } from '../shipments/events.ts';
import {
  type Audience,
  type EventDefinition,
  type ExampleContext,
  publishedSchema,
  type Receiver,
  receiverOf,
} from './event-schema.ts';
import { OPERATIONAL_EVENTS } from './operational-event-schemas.ts';

/**
 * The event catalogue (CONTRACT.md, Event catalogue): every type Waybill sends, each registered
 * by the capability that emits it, with the schema of its data. A new type is one more entry here.
 */
export const EVENT_DEFINITIONS: readonly EventDefinition[] = [
  ...SHIPMENT_EVENTS,
  ...OPERATIONAL_EVENTS,
  ...APP_EVENTS,
];

/**
 * The types an endpoint subscribes to (spec section 6, and the operational ones of CONTRACT.md);
 * app events go to an app's events URL.
 */
export const EVENT_TYPES = EVENT_DEFINITIONS.filter((d) => d.sentTo === 'webhook_endpoints').map(
  (d) => d.type,
);

/** The shipment events alone: what a `waybill listen` command forwards unless told otherwise. */
export const SHIPMENT_EVENT_TYPES = SHIPMENT_EVENTS.map((d) => d.type);
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

export function eventDefinition(type: string): EventDefinition | undefined {
  return EVENT_DEFINITIONS.find((definition) => definition.type === type);
}

/** A full spec 2.6 envelope of the type around its example data, serialised as it would be sent. */
export function exampleEnvelope(
  options: ExampleContext & { type: string; tenantId: string; test?: boolean; id?: string },
): string {
  const definition = eventDefinition(options.type);
  if (!definition) throw new Error(`${options.type} is not in the event catalogue`);
  return buildEnvelope({
    id: options.id ?? newId('evt'),
    type: definition.type,
    tenantId: options.tenantId,
    livemode: options.livemode,
    createdAt: options.at,
    ...(options.test ? { test: true } : {}),
    data: definition.example(options),
  });
}

export interface EventTypeDescription {
  type: string;
  description: string;
  /** Who receives it: `endpoints` subscribe to it, `apps` get it at their events URL. */
  audience: Receiver;
  /** The older name of the same (`webhook_endpoints` or `app_events_url`), kept for clients that read it. */
  sent_to: Audience;
  schema: Record<string, unknown>;
  example: unknown;
}

const schemas = new Map<string, Record<string, unknown>>();

/** A type's published schema, built once: the definitions do not change while the process runs. */
export function schemaOf(definition: EventDefinition): Record<string, unknown> {
  let schema = schemas.get(definition.type);
  if (!schema) {
    schema = publishedSchema(definition);
    schemas.set(definition.type, schema);
  }
  return schema;
}

/**
 * GET /v1/webhook-event-types: every type with what it means, where it goes, the JSON Schema of
 * its message body and an example body (in the reader's own company and mode) valid against it.
 */
export function listEventTypes(options: {
  tenantId: string;
  livemode: boolean;
  at: Date;
  sentTo?: Audience;
  audience?: Receiver;
}): { data: EventTypeDescription[] } {
  return {
    data: EVENT_DEFINITIONS.filter(
      (definition) =>
        (!options.sentTo || definition.sentTo === options.sentTo) &&
        (!options.audience || receiverOf(definition.sentTo) === options.audience),
    ).map((definition) => ({
      type: definition.type,
      description: definition.description,
      audience: receiverOf(definition.sentTo),
      sent_to: definition.sentTo,
      schema: schemaOf(definition),
      example: JSON.parse(
        exampleEnvelope({
          type: definition.type,
          tenantId: options.tenantId,
          livemode: options.livemode,
          customerAccountId: null,
          at: options.at,
        }),
      ),
    })),
  };
}

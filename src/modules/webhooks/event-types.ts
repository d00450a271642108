import { newId } from '../../lib/ids.ts';
import { APP_EVENTS } from '../app-events/event-schemas.ts';
import { SHIPMENT_EVENTS, TRACKING_EVENTS } from '../shipments/event-schemas.ts';
import { API_VERSION, type ApiVersion, buildEnvelope, LATEST_API_VERSION } from '../shipments/events.ts';
import {
  type Audience,
  definitionIn,
  type EventDefinition,
  type ExampleContext,
  inVersion,
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
  ...TRACKING_EVENTS,
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
  options: ExampleContext & {
    type: string;
    tenantId: string;
    test?: boolean;
    id?: string;
    /** 2026-11-01 unless given (a type of 2026-12-01 only: that version). */
    apiVersion?: ApiVersion;
  },
): string {
  const found = eventDefinition(options.type);
  if (!found) throw new Error(`${options.type} is not in the event catalogue`);
  const apiVersion = options.apiVersion ?? found.since ?? API_VERSION;
  const definition = definitionIn(found, apiVersion);
  return buildEnvelope({
    apiVersion,
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

/** A type's published schema in a version, built once: the definitions do not change while the process runs. */
export function schemaOf(
  definition: EventDefinition,
  version: ApiVersion = API_VERSION,
): Record<string, unknown> {
  const key = `${version}:${definition.type}`;
  let schema = schemas.get(key);
  if (!schema) {
    schema = publishedSchema(definition, version);
    schemas.set(key, schema);
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
  /** The version whose types and schemas are listed: the latest unless given. */
  apiVersion?: ApiVersion;
}): { data: EventTypeDescription[] } {
  const version = options.apiVersion ?? LATEST_API_VERSION;
  return {
    data: EVENT_DEFINITIONS.filter(
      (definition) =>
        inVersion(definition, version) &&
        (!options.sentTo || definition.sentTo === options.sentTo) &&
        (!options.audience || receiverOf(definition.sentTo) === options.audience),
    ).map((definition) => ({
      type: definition.type,
      description: definition.description,
      audience: receiverOf(definition.sentTo),
      sent_to: definition.sentTo,
      schema: schemaOf(definition, version),
      example: JSON.parse(
        exampleEnvelope({
          apiVersion: version,
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

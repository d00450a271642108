import { type TSchema, Type } from 'typebox';
import { API_VERSION, type ApiVersion } from '../shipments/events.ts';

/** Where a type's messages go: endpoints subscribe to it, or every app's events URL gets it. */
export const AUDIENCES = ['webhook_endpoints', 'app_events_url'] as const;
export type Audience = (typeof AUDIENCES)[number];

/**
 * Who receives a type, as CONTRACT.md names it (the catalogue's `audience`): `endpoints` subscribe
 * to it; `apps` get it at their events URL (app events and privacy messages).
 */
export const RECEIVERS = ['endpoints', 'apps'] as const;
export type Receiver = (typeof RECEIVERS)[number];

export function receiverOf(audience: Audience): Receiver {
  return audience === 'webhook_endpoints' ? 'endpoints' : 'apps';
}

/** What an example is made for: the reader's own mode and account, at a moment. */
export interface ExampleContext {
  at: Date;
  livemode: boolean;
  customerAccountId: string | null;
}

/**
 * One event type as the capability that emits it registers it with the catalogue
 * (event-types.ts): the schema of its `data`, with an `$id` naming the shape (a shape shared by
 * several types is one `$defs` entry and one OpenAPI component), and the data of its example.
 */
export interface EventDefinition<T extends string = string> {
  type: T;
  sentTo: Audience;
  description: string;
  /** Its data in the first version it has (2026-11-01 unless `since`). */
  data: TSchema;
  example(context: ExampleContext): unknown;
  /** The first version that has the type (2026-11-01 when absent). */
  since?: ApiVersion;
  /** Its data from 2026-12-01 on, where it differs (a shipment event's tracked shipment). */
  latest?: { data: TSchema; example(context: ExampleContext): unknown };
}

/** Is the type in that version? */
export function inVersion(definition: EventDefinition | undefined, version: ApiVersion): boolean {
  return definition !== undefined && (definition.since ?? '2026-11-01') <= version;
}

/** The type as a version has it: its data schema and example there. */
export function definitionIn(definition: EventDefinition, version: ApiVersion): EventDefinition {
  if (version === '2026-11-01' || !definition.latest) return definition;
  return { ...definition, data: definition.latest.data, example: definition.latest.example };
}

/**
 * The envelope of spec 2.6 around a type's data, written once for every type. Closed
 * (additionalProperties false), so a field Waybill adds without its schema fails validation.
 */
export function envelopeSchema(definition: EventDefinition, version: ApiVersion = API_VERSION) {
  return Type.Object(
    {
      id: Type.String({
        pattern: '^evt_[0-9A-Za-z]+$',
        description: 'The event id: equals the webhook-id header, the same on every retry and replay',
      }),
      type: Type.Literal(definition.type, { description: 'The event type' }),
      api_version: Type.Literal(version, {
        description: 'The schema set the message was built with (docs/api.md, Versioning)',
      }),
      created_at: Type.String({ format: 'date-time', description: 'When the event happened (UTC)' }),
      tenant_id: Type.String({
        format: 'uuid',
        description: 'The company (all zeros on a test message that concerns no company)',
      }),
      livemode: Type.Boolean({ description: 'false for sandbox (test mode) data' }),
      installation_id: Type.Optional(
        Type.String({
          pattern: '^inst_[0-9A-Za-z]+$',
          description:
            "On an app subscription's message only: the installation (the company, or its merchant account) it is sent for",
        }),
      ),
      test: Type.Optional(
        Type.Literal(true, {
          description: 'Present and true on a test message: its data is an example, not a real change',
        }),
      ),
      data: definition.data,
    },
    {
      additionalProperties: false,
      title: componentName(definition.type),
      description: definition.description,
    },
  );
}

/** `shipment.status_changed` is ShipmentStatusChangedEvent: its name in $defs and in the OpenAPI components. */
export function componentName(type: string): string {
  const words = type.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return `${words.map((word) => word[0]?.toUpperCase() + word.slice(1)).join('')}Event`;
}

/** The `$id` of a type's schema: the schema set (api_version) and the type. */
export function schemaId(type: string, version: ApiVersion = API_VERSION): string {
  return `urn:waybill:events:${version}:${type}`;
}

type Json = { [key: string]: unknown };

/**
 * Takes every embedded schema with an `$id` (TypeBox embeds a shared schema, Shipment for one, in
 * each schema that uses it) out of `schema` into `definitions`, leaving a `$ref` to `refBase` +
 * its name: `#/$defs/` for a standalone schema, `#/components/schemas/` for the OpenAPI document.
 * One name, one shape: two different shapes under one name are a bug, and throw.
 */
export function hoistDefinitions(schema: unknown, refBase: string, definitions: Record<string, Json>): Json {
  const visit = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((item) => visit(item, false));
    if (node === null || typeof node !== 'object') return node;
    const { $id, ...rest } = node as Json;
    const body: Json = {};
    for (const [key, value] of Object.entries(rest)) body[key] = visit(value, false);
    if (root || typeof $id !== 'string') return body;
    const known = definitions[$id];
    if (known && JSON.stringify(known) !== JSON.stringify(body)) {
      throw new Error(`two different schemas are named ${$id}`);
    }
    definitions[$id] = body;
    return { $ref: `${refBase}${$id}` };
  };
  return visit(JSON.parse(JSON.stringify(schema)), true) as Json;
}

/** A type's published schema: a standalone JSON Schema (draft 2020-12) of the whole message body. */
export function publishedSchema(definition: EventDefinition, version: ApiVersion = API_VERSION): Json {
  const $defs: Json & Record<string, Json> = {};
  const body = hoistDefinitions(
    envelopeSchema(definitionIn(definition, version), version),
    '#/$defs/',
    $defs,
  );
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: schemaId(definition.type, version),
    ...body,
    $defs: Object.fromEntries(Object.entries($defs).sort(([a], [b]) => a.localeCompare(b))),
  };
}

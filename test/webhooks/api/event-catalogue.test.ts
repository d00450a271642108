import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEventTypes } from '../../../src/modules/webhooks/event-types.ts';
import { install, registerApp } from '../../apps/fixtures.ts';
import { type Receiver, startReceiver, testWorker } from '../../delivery/support.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { checkReceived, messageProblems, takeInvalidMessages } from '../../support/message-check.ts';

/** The event catalogue (issue 24): a published JSON Schema per type, and every message checked. */

const isShipmentType = (type: string) => type.startsWith('shipment.');
/** test/webhooks/operational-events.test.ts sends the operational types, checked as every message is. */
const SENT_HERE = [
  'shipment.created',
  'shipment.status_changed',
  'shipment.delivered',
  'shipment.exception',
  'app.uninstalled',
  'customer.data_request',
  'customer.redact',
];

const ALL_TYPES = [
  'shipment.created',
  'shipment.status_changed',
  'shipment.delivered',
  'shipment.exception',
  'webhook_endpoint.failing',
  'webhook_endpoint.disabled',
  'webhook_endpoint.recovered',
  'app.uninstalled',
  'app.scopes_updated',
  'customer.data_request',
  'customer.redact',
];

let w: TestWaybill;
let company: CompanyFixture;
let receiver: Receiver;
let catalogue: Json[];

beforeAll(async () => {
  w = await startWaybill();
  receiver = await startReceiver();
  company = await createCompany(w);
  const answer = await call(w, 'GET', '/v1/webhook-event-types?api_version=2026-11-01', {
    token: company.liveToken,
  });
  expect(answer.status).toBe(200);
  catalogue = answer.body.data;
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

const entryOf = (type: string): Json => catalogue.find((entry) => entry.type === type);

/** Every `properties` entry of a schema, with the schema that describes it ($ref followed). */
function fieldsOf(schema: Json, root: Json, path = ''): Array<{ path: string; schema: Json }> {
  const resolved = schema.$ref ? root.$defs[schema.$ref.replace('#/$defs/', '')] : schema;
  const found: Array<{ path: string; schema: Json }> = [];
  for (const [name, property] of Object.entries<Json>(resolved.properties ?? {})) {
    const target = property.$ref ? root.$defs[property.$ref.replace('#/$defs/', '')] : property;
    found.push({ path: `${path}/${name}`, schema: target });
    found.push(...fieldsOf(target, root, `${path}/${name}`));
  }
  for (const branch of resolved.anyOf ?? []) found.push(...fieldsOf(branch, root, path));
  if (resolved.items) found.push(...fieldsOf(resolved.items, root, `${path}/0`));
  return found;
}

describe('GET /v1/webhook-event-types', () => {
  it('lists every type Waybill sends, each with a draft 2020-12 schema of its whole envelope and a valid example', () => {
    expect(catalogue.map((entry) => entry.type)).toEqual(ALL_TYPES);
    const ids = new Set<string>();
    for (const entry of catalogue) {
      const { schema, example } = entry;
      expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
      expect(schema.$id).toBe(`urn:waybill:events:${example.api_version}:${entry.type}`);
      ids.add(schema.$id);
      expect(schema.properties.type.const).toBe(entry.type);
      expect(schema.properties.api_version.const).toBe(example.api_version);
      expect(Object.keys(schema.properties)).toEqual([
        'id',
        'type',
        'api_version',
        'created_at',
        'tenant_id',
        'livemode',
        'installation_id',
        'test',
        'data',
      ]);
      // Strict mode refuses any keyword that is not JSON Schema (TypeBox's own, OpenAPI's).
      const validate = new Ajv2020({ strict: true, validateFormats: false }).compile(schema);
      expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
      expect(messageProblems({ body: JSON.stringify(example) })).toEqual([]);
    }
    expect(ids.size).toBe(ALL_TYPES.length);
  });

  it('publishes the very schemas every receiver in the test suite checks messages against', () => {
    const checked = listEventTypes({
      tenantId: company.tenantId,
      livemode: true,
      at: w.clock.now(),
      apiVersion: '2026-11-01',
    }).data;
    expect(catalogue.map((entry) => entry.schema)).toEqual(checked.map((entry) => entry.schema));
  });

  it('describes every field, and closes every object Waybill controls', () => {
    for (const { type, schema } of catalogue) {
      const fields = fieldsOf(schema, schema);
      expect(fields.length, type).toBeGreaterThan(8);
      for (const field of fields) expect(field.schema.description, `${type} ${field.path}`).toBeTruthy();
      const objects = [schema, ...Object.values<Json>(schema.$defs), ...fields.map((f) => f.schema)].filter(
        (s) => s.type === 'object',
      );
      for (const object of objects) expect(object.additionalProperties, type).toBe(false);
    }
  });

  it('takes data.shipment from the one Shipment schema GET /v1/shipments/{id} answers with', () => {
    const shipmentTypes = catalogue.filter((entry) => isShipmentType(entry.type));
    expect(shipmentTypes).toHaveLength(4);
    for (const { schema } of shipmentTypes) {
      expect(schema.properties.data).toEqual({ $ref: '#/$defs/ShipmentEventData' });
      expect(schema.$defs.ShipmentEventData.properties.shipment).toEqual({ $ref: '#/$defs/Shipment' });
      expect(schema.$defs.Shipment.properties.parcels.items).toEqual({ $ref: '#/$defs/Parcel' });
    }
  });
});

describe('a message checked against its schema', () => {
  /** Each change of a valid message that must make it invalid. */
  const mutations: Array<[string, (message: Json) => void]> = [
    ['a field added to the envelope', (m) => Object.assign(m, { source: 'api' })],
    ['a field added to data', (m) => Object.assign(m.data, { note: 'x' })],
    ['the envelope without created_at', (m) => delete m.created_at],
    ['data without a field', (m) => delete m.data[Object.keys(m.data)[0] as string]],
    ['another api_version', (m) => Object.assign(m, { api_version: '2020-01-01' })],
    ['test: false', (m) => Object.assign(m, { test: false })],
    ['an id without its prefix', (m) => Object.assign(m, { id: 'event-1' })],
  ];
  const shipmentMutations: Array<[string, (message: Json) => void]> = [
    ['a field added to data.shipment', (m) => Object.assign(m.data.shipment, { weight: 3 })],
    ['data.shipment without currency', (m) => delete m.data.shipment.currency],
    ['a field added to a parcel', (m) => Object.assign(m.data.shipment.parcels[0], { fragile: true })],
    ['a status the state machine does not have', (m) => Object.assign(m.data, { status: 'lost' })],
  ];

  it('fails with a field added or missing anywhere, for every type', () => {
    for (const entry of catalogue) {
      const changes = isShipmentType(entry.type) ? [...mutations, ...shipmentMutations] : mutations;
      for (const [change, mutate] of changes) {
        const message = structuredClone(entry.example);
        mutate(message);
        expect(messageProblems({ body: JSON.stringify(message) }), `${entry.type}: ${change}`).not.toEqual(
          [],
        );
      }
    }
  });

  it('fails the test whose receiver got it: a receiver in test/ records a message that is not valid', async () => {
    const example = structuredClone(entryOf('shipment.created').example);
    example.data.shipment.carrier = 'someone else';
    await fetch(receiver.url, {
      method: 'POST',
      headers: { 'webhook-id': example.id, 'webhook-event': example.type },
      body: JSON.stringify(example),
    });
    checkReceived({ body: '{"type":"shipment.teleported"}' }, 'this test');
    // Taken here, so that this test passes; left alone, message-check-setup.ts fails it.
    const invalid = takeInvalidMessages();
    expect(invalid).toHaveLength(2);
    expect(invalid[0]).toContain('must NOT have additional properties {"additionalProperty":"carrier"}');
    expect(invalid[1]).toContain('"shipment.teleported" is not an event type');
    receiver.received.length = 0;
  });
});

describe('what Waybill sends', () => {
  it('validates: a message of every type built by the engine, a test message and a replay', async () => {
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ALL_TYPES.slice(0, 4) },
    });
    expect(endpoint.status).toBe(201);
    const developer = company.owner;
    const app = await registerApp(w, developer, { events_url: receiver.url });
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: developer.id,
    });

    const shipment = await createShipment(w, company.liveToken, { recipient_email: 'ada@example.com' });
    for (const status of ['picked_up', 'in_transit', 'exception', 'out_for_delivery', 'delivered']) {
      const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
        token: company.liveToken,
        body: { status, ...(status === 'exception' ? { exception_reason: 'lost' } : {}) },
      });
      expect(moved.status).toBe(200);
    }
    for (const kind of ['data_request', 'redact']) {
      const filed = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
        token: company.owner.token,
        body: { kind, recipient: { email: 'ada@example.com' } },
      });
      expect(filed.status).toBe(201);
    }
    // Sent after the erasure, the shipment's messages carry it redacted, as the API now shows it.
    const current = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(current.body.recipient_email).toBeNull();
    const removed = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/installations/${installation.id}`,
      { token: company.owner.token },
    );
    expect(removed.status).toBe(204);
    const worker = testWorker(w);
    for (let sent = 1; sent > 0; ) sent = await worker.tick();
    await worker.stop();

    const tested = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.body.id}/test`, {
      token: company.liveToken,
      body: { event_type: 'shipment.exception' },
    });
    expect(tested.body.status_code).toBe(200);
    const replayed = await call(w, 'POST', `/v1/webhook-deliveries/${tested.body.delivery_id}/replay`, {
      token: company.liveToken,
    });
    expect(replayed.status).toBe(200);

    const bodies = receiver.received.map((message) => JSON.parse(message.body));
    expect([...new Set(bodies.map((body) => body.type))].sort()).toEqual([...SENT_HERE].sort());
    for (const message of receiver.received) expect(messageProblems(message), message.body).toEqual([]);
    expect(bodies.filter((body) => body.test === true)).toHaveLength(2);
    // data.shipment is the shipment as GET /v1/shipments/{id} answers it.
    const delivered = bodies.find((body) => body.type === 'shipment.delivered');
    // (The erasure touched the shipment after the event: its updated_at is the erasure's.)
    expect({ ...delivered.data.shipment, updated_at: null }).toEqual({
      ...current.body,
      tracking_url: undefined,
      updated_at: null,
    });
  });
});

import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeWebhookHistory } from '../../src/delivery/retention.ts';
import { DAY, HOUR } from '../../src/lib/clock.ts';
import { forgetToldContacts } from '../../src/modules/privacy/erasure.ts';
import { install, registerApp } from '../apps/fixtures.ts';
import { type Received, type Receiver, startReceiver, testWorker, verify } from '../delivery/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  type Json,
  signUpPerson,
} from '../support/api.ts';
import { engine, startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInInBrowser } from '../web/page-client.ts';

/** The recipient to be erased, as the company typed them. */
const NAME = 'Zebulon Quarrington';
const EMAIL = 'zebulon.quarrington@example.org';
const PHONE = '+44 20 7946 0123';
/** Every form the recipient's details take (the phone is also kept by its digits). */
const TRACES = [NAME, EMAIL, PHONE, '+442079460123', '2079460123', 'Quarrington'];
/** Another recipient of the same company, who stays. */
const OTHER = 'Philippa Unerased';

let w: TestWaybill;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  w = await startWaybill({ logger: pino({ level: 'info' }, sink) });
});
afterAll(async () => {
  await w?.close();
});

/**
 * Every row of every table of the instance's schema, as text: `pg_dump` of the test schema on
 * PostgreSQL (when it is on PATH), and each table's rows as JSON on both engines.
 */
async function dumpDatabase(): Promise<string> {
  const { rows: tables } = await sql<{ name: string }>`
    SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'm')
    ORDER BY c.relname`.execute(w.ctx.db);
  expect(tables.map((t) => t.name)).toContain('events');
  const parts: string[] = [];
  for (const { name } of tables) {
    // bytea columns (answers received) as text as well as hex.
    const { rows } = await sql<{
      row: string;
    }>`SELECT row_to_json(t)::text AS row FROM ${sql.table(name)} t`.execute(w.ctx.db);
    for (const { row } of rows) {
      parts.push(row);
      for (const hex of row.matchAll(/\\\\x([0-9a-f]+)/g))
        parts.push(Buffer.from(hex[1] ?? '', 'hex').toString('utf8'));
    }
  }
  if (engine === 'postgres' && w.schema) {
    try {
      parts.push(
        execFileSync('pg_dump', [`--schema=${w.schema}`, process.env.WAYBILL_TEST_DATABASE_URL as string], {
          encoding: 'utf8',
          maxBuffer: 512 * 1024 * 1024,
        }),
      );
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return parts.join('\n');
}

function tracesIn(text: string): string[] {
  return TRACES.filter((trace) => text.includes(trace));
}

async function createEndpoint(company: CompanyFixture, url: string): Promise<{ id: string; secret: string }> {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token: company.liveToken,
    body: { url, event_types: ['shipment.created', 'shipment.status_changed'] },
  });
  expect(created.status).toBe(201);
  return { id: created.body.id, secret: created.body.secret };
}

async function drain(): Promise<void> {
  const worker = testWorker(w);
  await worker.tick();
  await worker.stop();
}

describe('an erasure', () => {
  let company: CompanyFixture;
  let receiver: Receiver;
  let failing: Receiver;
  let appReceiver: Receiver;
  let shipments: Json[];
  let endpointA: { id: string; secret: string };
  let endpointB: { id: string; secret: string };

  beforeAll(async () => {
    // A receiver that answers with what it was sent: the attempt log keeps the answer's head.
    receiver = await startReceiver((message, res) => res.end(message.body));
    appReceiver = await startReceiver((message, res) => res.end(message.body));
    failing = await startReceiver((_m, res) => {
      res.statusCode = 500;
      res.end('down');
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await failing?.close();
    await appReceiver?.close();
  });

  it('reaches every copy: the database, the API, the pages and every message sent afterwards', async () => {
    company = await createCompany(w, 'Erasure Co');
    endpointA = await createEndpoint(company, receiver.url);
    endpointB = await createEndpoint(company, failing.url);
    // An installed app that can see the shipments: it is told of privacy requests.
    const developer = await signUpPerson(w, 'Developer');
    const app = await registerApp(w, developer, { events_url: appReceiver.url });
    await install(w, { appId: app.id, tenantId: company.tenantId, userId: company.owner.id });
    const recipient = { recipient_name: NAME, recipient_email: EMAIL, recipient_phone: PHONE };
    shipments = [
      await createShipment(w, company.liveToken, { ...recipient, status: 'confirmed' }),
      await createShipment(w, company.liveToken, { ...recipient, status: 'confirmed' }),
    ];
    const other = await createShipment(w, company.liveToken, { recipient_name: OTHER, status: 'confirmed' });
    await drain();
    // A later event of the first shipment goes unanswered by A: its retry is due after the erasure.
    receiver.answer = (_m, res) => {
      res.statusCode = 503;
      res.end('busy');
    };
    const moved = await call(w, 'POST', `/v1/shipments/${shipments[0].id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    expect(moved.status).toBe(200);
    await drain();
    // A data request about the recipient, filed before the erasure, keeps the contact until then.
    const asked = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'data_request', recipient: { email: EMAIL, phone: PHONE } },
    });
    expect(asked.status).toBe(201);
    await drain();
    const dataRequest = verify(
      appReceiver.received.at(-1) as Received,
      app.events_secret,
      w.clock.now(),
    ) as Json;
    expect(dataRequest.type).toBe('customer.data_request');
    expect(dataRequest.data.recipient).toEqual({ email: EMAIL, phone: '+442079460123' });
    // Endpoint B failed every message: disabling it cancels them, for a bulk replay later.
    const disabled = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpointB.id}`, {
      token: company.liveToken,
      body: { enabled: false },
    });
    expect(disabled.status).toBe(200);

    // A delivery written before migration 0016 holds a copy of its own (one that differs from its
    // event's, which migration 0031 left): it is what that delivery sends.
    const legacy = await w.ctx.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('events as ev', (join) =>
        join.onRef('ev.id', '=', 'd.event_id').onRef('ev.tenant_id', '=', 'd.tenant_id'),
      )
      .select(['d.id', 'ev.payload'])
      .where('d.tenant_id', '=', company.tenantId)
      .where('d.endpoint_id', '=', endpointA.id)
      .where('ev.shipment_id', '=', shipments[1].id)
      .executeTakeFirstOrThrow();
    const legacyCopy = JSON.parse(legacy.payload);
    legacyCopy.data.shipment.external_ref = 'kept in the delivery';
    await w.ctx.db
      .updateTable('webhook_deliveries')
      .set({ payload: JSON.stringify(legacyCopy) })
      .where('id', '=', legacy.id)
      .execute();

    // Before the erasure, the details are there: in the messages, the events and the database.
    expect(receiver.received.some((m) => m.body.includes(NAME))).toBe(true);
    expect(tracesIn(await dumpDatabase())).toEqual(TRACES);
    const sentBefore = receiver.received.length + failing.received.length;

    const erased = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'redact', recipient: { email: EMAIL.toUpperCase() } },
    });
    expect(erased.status).toBe(201);
    expect(erased.body.shipment_count).toBe(2);

    // The database: no row of any table holds them but the erasure's own message to the app,
    // which names the person to erase (spec 2.7) until it reaches the app; the other recipient stays.
    const dump = await dumpDatabase();
    expect(tracesIn(dump)).toEqual([EMAIL]);
    const notTheErasureMessage = dump
      .split('\n')
      .filter((line) => !line.includes('customer.redact'))
      .join('\n');
    expect(tracesIn(notTheErasureMessage)).toEqual([]);
    expect(dump).toContain(OTHER);

    // The API.
    const answers: string[] = [];
    const get = async (path: string, token = company.liveToken) => {
      const response = await call(w, 'GET', path, { token });
      expect(response.status, path).toBe(200);
      answers.push(response.text);
      return response.body;
    };
    for (const shipment of shipments) await get(`/v1/shipments/${shipment.id}`);
    await get('/v1/shipments?limit=100');
    const events = await get('/v1/events?limit=100');
    expect(events.data.length).toBeGreaterThanOrEqual(4);
    const deliveryIds: string[] = [];
    for (const endpoint of [endpointA, endpointB]) {
      const page = await get(`/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=100`);
      for (const delivery of page.data) deliveryIds.push(delivery.id);
    }
    expect(deliveryIds.length).toBeGreaterThanOrEqual(8);
    for (const id of deliveryIds) {
      const delivery = await get(`/v1/webhook-deliveries/${id}`);
      expect(delivery.message.body).toBeTruthy();
    }
    const requests = await get(`/v1/companies/${company.tenantId}/privacy-requests`, company.owner.token);
    expect(requests.data.map((r: Json) => r.recipient)).toEqual([
      { email: '[redacted]', phone: null },
      { email: '[redacted]', phone: '[redacted]' },
    ]);
    expect(tracesIn(answers.join('\n'))).toEqual([]);
    expect(answers.join('\n')).toContain(OTHER);

    // The pages.
    const owner = await signInInBrowser(w, company.owner.email);
    const live = await owner.get(
      `/dashboard/switch?tenant=${company.tenantId}&mode=live&return_to=/dashboard`,
    );
    expect(live.status).toBe(303);
    const pages: string[] = [];
    for (const path of [
      '/dashboard/events',
      '/dashboard/shipments',
      `/dashboard/shipments/${shipments[0].id}`,
      '/dashboard/privacy-requests',
    ]) {
      const page = await owner.get(path);
      expect(page.status, path).toBe(200);
      pages.push(page.text);
    }
    expect(pages[0]).toContain(shipments[0].id);
    expect(tracesIn(pages.join('\n'))).toEqual([]);

    // What is sent afterwards: the retry, a replay, a bulk replay; signed over what is sent.
    receiver.answer = (_m, res) => res.end('ok');
    failing.answer = (_m, res) => res.end('ok');
    w.clock.advance(HOUR);
    await drain();
    const succeeded = (
      await call(w, 'GET', `/v1/webhook-endpoints/${endpointA.id}/deliveries?limit=100`, {
        token: company.liveToken,
      })
    ).body.data.filter((d: { status: string }) => d.status === 'succeeded');
    const replayed = await call(w, 'POST', `/v1/webhook-deliveries/${succeeded[0].id}/replay`, {
      token: company.liveToken,
    });
    expect(replayed.status).toBe(200);
    const enabled = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpointB.id}`, {
      token: company.liveToken,
      body: { enabled: true },
    });
    expect(enabled.status).toBe(200);
    const bulk = await call(w, 'POST', `/v1/webhook-endpoints/${endpointB.id}/deliveries/replay`, {
      token: company.liveToken,
    });
    expect(bulk.status).toBe(200);
    expect(bulk.body.replayed).toBeGreaterThanOrEqual(3);
    await drain();

    // The erasure's message reached the app, naming the person; from then on its copy does not.
    const told = verify(appReceiver.received.at(-1) as Received, app.events_secret, w.clock.now()) as Json;
    expect(told.type).toBe('customer.redact');
    expect(told.data.recipient).toEqual({ email: EMAIL, phone: null });
    expect(await forgetToldContacts(w.ctx)).toMatchObject({ redacted: 1 });
    expect(tracesIn(await dumpDatabase())).toEqual([]);
    const developerPages = await signInInBrowser(w, developer.email);
    const messages = await call(w, 'GET', `/v1/developer/apps/${app.id}/event-messages?limit=100`, {
      token: developer.token,
    });
    expect(messages.status).toBe(200);
    expect(tracesIn(messages.text)).toEqual([]);
    expect((await developerPages.get(`/developer/apps/${app.id}/event-messages`)).status).toBe(200);
    expect(tracesIn((await developerPages.get(`/developer/apps/${app.id}/event-messages`)).text)).toEqual([]);
    const appBefore = appReceiver.received.length;
    for (const message of messages.body.data as Json[]) {
      const again = await call(
        w,
        'POST',
        `/v1/developer/apps/${app.id}/event-messages/${message.id}/replay`,
        { token: developer.token },
      );
      expect(again.status).toBe(200);
    }
    const appLate = appReceiver.received.slice(appBefore);
    expect(appLate.map((m) => JSON.parse(m.body).type).sort()).toEqual([
      'customer.data_request',
      'customer.redact',
    ]);
    for (const message of appLate) {
      verify(message, app.events_secret, w.clock.now());
      expect(tracesIn(message.body)).toEqual([]);
    }

    // Those sent after the erasure: the retry (A), the replay (A) and the bulk replay (B).
    const lateA = receiver.received.slice(receiver.received.length - 2);
    const lateB = failing.received.slice(-bulk.body.replayed);
    expect(receiver.received.length + failing.received.length - sentBefore).toBe(2 + bulk.body.replayed);
    for (const message of [...lateA, ...lateB]) {
      const secret = lateA.includes(message) ? endpointA.secret : endpointB.secret;
      const envelope = verify(message, secret, w.clock.now()) as Json;
      expect(envelope.data.shipment.id).toMatch(/^shp_/);
      if (envelope.data.shipment.id !== other.id)
        expect(envelope.data.shipment).toMatchObject({
          recipient_name: '[redacted]',
          recipient_email: null,
          recipient_phone: null,
        });
      expect(tracesIn(message.body)).toEqual([]);
    }
  });
});

describe('the log', () => {
  it('carries no value of a statement that failed', async () => {
    const company = await createCompany(w, 'Log Co');
    const fiona = {
      name: 'Fiona Failsworth',
      email: 'fiona.failsworth@example.org',
      phone: '+1 555 0199 42',
    };
    // A statement the database refuses, with the recipient's details among its values.
    await sql`ALTER TABLE shipments ADD CONSTRAINT no_fiona CHECK (recipient_name <> ${sql.lit(fiona.name)})`.execute(
      w.ctx.db,
    );
    try {
      const start = logLines.length;
      const refused = await call(w, 'POST', '/v1/shipments', {
        token: company.liveToken,
        body: {
          recipient_name: fiona.name,
          recipient_email: fiona.email,
          recipient_phone: fiona.phone,
          currency: 'EUR',
        },
      });
      expect(refused.status).toBe(500);
      expect(refused.text).not.toContain('Fiona');
      const log = logLines.slice(start).join('');
      // The failure is logged, with what says what failed: its code and constraint.
      expect(log).toContain('unhandled error');
      expect(log).toContain('no_fiona');
      expect(log).toContain('23514');
      for (const value of [fiona.name, 'Failsworth', fiona.email, fiona.phone, '0199 42']) {
        expect(log, value).not.toContain(value);
      }
    } finally {
      await sql`ALTER TABLE shipments DROP CONSTRAINT no_fiona`.execute(w.ctx.db);
    }
  });
});

describe('events', () => {
  it('are kept 30 days, and a delivery still pending keeps its event', async () => {
    const company = await createCompany(w, 'Retention Co');
    const receiver = await startReceiver();
    try {
      const endpoint = await createEndpoint(company, receiver.url);
      const old = await createShipment(w, company.liveToken, { status: 'confirmed' });
      await drain();
      w.clock.advance(29 * DAY);
      receiver.answer = (_m, res) => {
        res.statusCode = 503;
        res.end('busy');
      };
      const recent = await createShipment(w, company.liveToken, { status: 'confirmed' });
      await drain();
      const eventsOf = async (shipmentId: string) =>
        (
          await call(w, 'GET', `/v1/events?limit=100&shipment_id=${shipmentId}`, {
            token: company.liveToken,
          })
        ).body.data as Json[];
      expect(await eventsOf(old.id)).toHaveLength(1);

      w.clock.advance(DAY + HOUR);
      const purged = await purgeWebhookHistory(w.ctx);
      expect(purged.events).toBeGreaterThanOrEqual(1);
      expect(await eventsOf(old.id)).toEqual([]);
      const kept = await eventsOf(recent.id);
      expect(kept).toHaveLength(1);
      // The shipment itself is no history: it stays.
      expect((await call(w, 'GET', `/v1/shipments/${old.id}`, { token: company.liveToken })).status).toBe(
        200,
      );
      const deliveries = (
        await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=100`, {
          token: company.liveToken,
        })
      ).body.data as Json[];
      expect(deliveries.map((d) => d.status)).toEqual(['pending']);
      const pending = await call(w, 'GET', `/v1/webhook-deliveries/${deliveries[0].id}`, {
        token: company.liveToken,
      });
      expect(JSON.parse(pending.body.message.body).id).toBe(kept[0].id);

      // The pending delivery is sent, with its event's message.
      receiver.answer = (_m, res) => res.end('ok');
      const before = receiver.received.length;
      await drain();
      const sent = receiver.received.slice(before);
      expect(sent).toHaveLength(1);
      const envelope = verify(sent[0] as Received, endpoint.secret, w.clock.now()) as Json;
      expect(envelope.id).toBe(kept[0].id);
      expect(envelope.data.shipment.id).toBe(recent.id);
    } finally {
      await receiver.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { housekeeping } from '../../src/jobs.ts';
import {
  type CompanyFixture,
  call,
  createApiToken,
  createCompany,
  createShipment,
  type Json,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { createMerchant } from '../webhooks/api/support.ts';
import { signedHeaders } from './signing.ts';

const SOURCE_FIELDS = [
  'carrier_code',
  'created_at',
  'customer_account_id',
  'id',
  'livemode',
  'mode',
  'name',
  'updated_at',
  'url',
].sort();

function batch(numbers: string[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    checkpoints: numbers.map((number, i) => ({
      tracking_number: number,
      occurred_at: '2026-11-21T11:00:00.000Z',
      message: `Scanned at the hub (${i})`,
      location: { city: 'Leipzig', country: 'DE' },
      ...extra,
    })),
  });
}

describe('inbound sources and signed batches', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let other: CompanyFixture;

  /** POSTs to the source's URL over a real socket, as a carrier would. */
  async function post(url: string, body: string, headers: Record<string, string>) {
    const response = await fetch(url, { method: 'POST', body, headers });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  }

  async function createSource(token: string, body: Record<string, unknown> = {}): Promise<Json> {
    const response = await call(w, 'POST', '/v1/inbound-sources', {
      token,
      body: { name: 'City Courier feed', carrier_code: 'city-courier', ...body },
    });
    if (response.status !== 201) throw new Error(`source failed: ${response.status} ${response.text}`);
    return response.body;
  }

  async function log(token: string, sourceId: string): Promise<Json[]> {
    const response = await call(w, 'GET', `/v1/inbound-sources/${sourceId}/messages`, { token });
    expect(response.status).toBe(200);
    return response.body.data;
  }

  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    other = await createCompany(w, 'Other Company');
  });
  afterAll(async () => {
    await w?.close();
  });

  it('creates a source with its secret once, then reads, lists, renames and deletes it', async () => {
    const created = await call(w, 'POST', '/v1/inbound-sources', {
      token: company.liveToken,
      body: { name: 'DHL feed', carrier_code: 'dhl', mode: 'live' },
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual([...SOURCE_FIELDS, 'secret'].sort());
    expect(created.body).toMatchObject({
      name: 'DHL feed',
      carrier_code: 'dhl',
      mode: 'live',
      livemode: true,
      customer_account_id: null,
    });
    expect(created.body.id).toMatch(/^ins_[0-9A-Za-z]+$/);
    expect(created.body.url).toBe(`${w.url}/inbound/${created.body.id}`);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const id = created.body.id;

    const read = await call(w, 'GET', `/v1/inbound-sources/${id}`, { token: company.liveToken });
    expect(read.status).toBe(200);
    expect(Object.keys(read.body).sort()).toEqual(SOURCE_FIELDS);

    const list = await call(w, 'GET', '/v1/inbound-sources', { token: company.liveToken });
    expect(list.body.data.map((s: Json) => s.id)).toContain(id);
    expect(list.body.data.every((s: Json) => !('secret' in s))).toBe(true);
    // Another mode and another company see nothing of it.
    const testList = await call(w, 'GET', '/v1/inbound-sources', { token: company.testToken });
    expect(testList.body.data.map((s: Json) => s.id)).not.toContain(id);
    expect((await call(w, 'GET', `/v1/inbound-sources/${id}`, { token: other.liveToken })).status).toBe(404);

    const renamed = await call(w, 'PATCH', `/v1/inbound-sources/${id}`, {
      token: company.liveToken,
      body: { name: 'DHL Express', carrier_code: 'dhl-express' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'DHL Express', carrier_code: 'dhl-express' });

    const deleted = await call(w, 'DELETE', `/v1/inbound-sources/${id}`, { token: company.liveToken });
    expect(deleted.status).toBe(204);
    expect((await call(w, 'GET', `/v1/inbound-sources/${id}`, { token: company.liveToken })).status).toBe(
      404,
    );
    const body = batch(['WB-NONE']);
    const gone = await post(
      created.body.url,
      body,
      signedHeaders(created.body.secret, body, { at: w.clock.now() }),
    );
    expect(gone.status).toBe(404);
  });

  it('refuses bad input, another mode than the token and a foreign merchant, writing nothing', async () => {
    const before = await call(w, 'GET', '/v1/inbound-sources', { token: company.liveToken });
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ carrier_code: 'DHL' }, 422, '/carrier_code'],
      [{ name: '   ' }, 422, '/name'],
      [{ mode: 'test' }, 422, '/mode'],
      [{ mode: 'sandbox' }, 400, '/mode'],
    ];
    for (const [body, status, path] of cases) {
      const response = await call(w, 'POST', '/v1/inbound-sources', {
        token: company.liveToken,
        body: { name: 'Feed', carrier_code: 'ups', ...body },
      });
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(response.body.errors.map((e: Json) => e.path).join()).toContain(path);
    }
    const foreign = await createMerchant(w, other);
    const response = await call(w, 'POST', '/v1/inbound-sources', {
      token: company.liveToken,
      body: { name: 'Feed', carrier_code: 'ups', customer_account_id: foreign.accountId },
    });
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('customer_account.not_found');
    const after = await call(w, 'GET', '/v1/inbound-sources', { token: company.liveToken });
    expect(after.body.data).toEqual(before.body.data);

    const readOnly = await createApiToken(w, company.owner, company.tenantId, {
      mode: 'live',
      scopes: ['webhooks:read'],
    });
    const refused = await call(w, 'POST', '/v1/inbound-sources', {
      token: readOnly,
      body: { name: 'Feed', carrier_code: 'ups' },
    });
    expect(refused.status).toBe(403);
  });

  it('answers a signed batch 202, counts what matched nothing and logs it', async () => {
    const source = await createSource(company.liveToken);
    const body = batch(['WB-UNKNOWN-1', 'WB-UNKNOWN-2']);
    const headers = signedHeaders(source.secret, body, { at: w.clock.now() });
    const answer = await post(source.url, body, headers);
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ accepted: 0, duplicates: 0, unmatched: 2 });

    const [entry] = await log(company.liveToken, source.id);
    expect(entry).toMatchObject({
      webhook_id: headers['webhook-id'],
      received_at: w.clock.now().toISOString(),
      status: 'partly_applied',
      results: [
        { index: 0, shipment_id: null, checkpoint_id: null, outcome: 'unmatched' },
        { index: 1, shipment_id: null, checkpoint_id: null, outcome: 'unmatched' },
      ],
    });
    expect(entry.reason).toContain('2 of 2');
    const one = await call(w, 'GET', `/v1/inbound-sources/${source.id}/messages/${entry.id}`, {
      token: company.liveToken,
    });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(entry);

    // The same webhook-id again: 202, nothing changes, logged as a duplicate.
    const again = await post(source.url, body, headers);
    expect(again.status).toBe(202);
    expect(again.body).toEqual({ accepted: 0, duplicates: 2, unmatched: 0 });
    const entries = await log(company.liveToken, source.id);
    expect(entries.map((e) => e.status)).toEqual(['duplicate', 'partly_applied']);
    expect(entries[0].results).toEqual([]);
  });

  it('applies matched checkpoints with source inbound: by either number, in order, once per external_id', async () => {
    const source = await createSource(company.liveToken);
    const byNumber = await createShipment(w, company.liveToken);
    const byCarrier = await createShipment(w, company.liveToken, { carrier_tracking_number: 'CC-778899' });
    const body = JSON.stringify({
      checkpoints: [
        {
          tracking_number: byNumber.tracking_number,
          occurred_at: '2026-11-21T10:00:00+01:00',
          message: 'Arrived at the Leipzig hub',
          location: { city: 'Leipzig', country: 'DE' },
          status: 'in_transit',
          external_id: 'scan-1',
        },
        {
          carrier_tracking_number: 'CC-778899',
          occurred_at: '2026-11-21T09:30:00.000Z',
          message: 'Out for delivery',
          status: 'out_for_delivery',
          external_id: 'scan-2',
        },
        // Older than the first: kept in the timeline, moves nothing.
        {
          tracking_number: byNumber.tracking_number,
          occurred_at: '2026-11-21T08:00:00.000Z',
          message: 'Picked up',
          status: 'picked_up',
          external_id: 'scan-3',
        },
        { tracking_number: 'WB-NOBODY', occurred_at: '2026-11-21T09:00:00Z', message: 'Unknown parcel' },
      ],
    });
    const headers = signedHeaders(source.secret, body, { at: w.clock.now() });
    const answer = await post(source.url, body, headers);
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ accepted: 3, duplicates: 0, unmatched: 1 });

    const [entry] = await log(company.liveToken, source.id);
    expect(entry.status).toBe('partly_applied');
    expect(entry.results.map((r: Json) => [r.index, r.shipment_id, r.outcome])).toEqual([
      [0, byNumber.id, 'applied'],
      [1, byCarrier.id, 'applied'],
      [2, byNumber.id, 'not_applied'],
      [3, null, 'unmatched'],
    ]);
    const first = await call(w, 'GET', `/v1/shipments/${byNumber.id}`, { token: company.liveToken });
    expect(first.body.status).toBe('in_transit');
    const second = await call(w, 'GET', `/v1/shipments/${byCarrier.id}`, { token: company.liveToken });
    expect(second.body.status).toBe('out_for_delivery');
    const timeline = await call(w, 'GET', `/v1/shipments/${byNumber.id}/checkpoints`, {
      token: company.liveToken,
    });
    expect(timeline.body.data.map((c: Json) => [c.id, c.source, c.external_id])).toEqual([
      [entry.results[0].checkpoint_id, 'inbound', 'scan-1'],
      [entry.results[2].checkpoint_id, 'inbound', 'scan-3'],
    ]);

    // The same message again changes nothing.
    expect((await post(source.url, body, headers)).body).toEqual({
      accepted: 0,
      duplicates: 4,
      unmatched: 0,
    });
    // Another message repeating an external_id: that checkpoint is a duplicate, the other applies.
    const more = JSON.stringify({
      checkpoints: [
        {
          tracking_number: byNumber.tracking_number,
          occurred_at: '2026-11-21T10:00:00+01:00',
          message: 'Arrived at the Leipzig hub',
          external_id: 'scan-1',
        },
        {
          tracking_number: byNumber.tracking_number,
          occurred_at: '2026-11-21T11:30:00Z',
          message: 'Loaded',
          status: 'out_for_delivery',
        },
      ],
    });
    const next = await post(source.url, more, signedHeaders(source.secret, more, { at: w.clock.now() }));
    expect(next.body).toEqual({ accepted: 1, duplicates: 1, unmatched: 0 });
    const [latest] = await log(company.liveToken, source.id);
    expect(latest.status).toBe('applied');
    expect(latest.results.map((r: Json) => r.outcome)).toEqual(['duplicate', 'applied']);
    expect(latest.results[0].checkpoint_id).toBe(entry.results[0].checkpoint_id);
    const after = await call(w, 'GET', `/v1/shipments/${byNumber.id}/checkpoints`, {
      token: company.liveToken,
    });
    expect(after.body.data).toHaveLength(3);
  });

  it('refuses a batch with one bad checkpoint with 422 naming it, writing none of the batch', async () => {
    const source = await createSource(company.liveToken);
    const shipment = await createShipment(w, company.liveToken);
    const body = JSON.stringify({
      checkpoints: [
        {
          tracking_number: shipment.tracking_number,
          occurred_at: '2026-11-21T10:00:00Z',
          message: 'Hub',
          status: 'in_transit',
        },
        {
          tracking_number: shipment.tracking_number,
          occurred_at: '2026-11-21T10:05:00Z',
          message: 'Hub',
          location: { city: 'Atlantis', country: 'XX' },
        },
      ],
    });
    const headers = signedHeaders(source.secret, body, { at: w.clock.now() });
    const answer = await post(source.url, body, headers);
    expect(answer.status).toBe(422);
    expect(answer.body.code).toBe('tracking.invalid_country');
    expect(answer.body.errors[0].path).toMatch(/^\/checkpoints\/1\/location\/country$/);
    const after = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(after.body.status).toBe(shipment.status);
    const timeline = await call(w, 'GET', `/v1/shipments/${shipment.id}/checkpoints`, {
      token: company.liveToken,
    });
    expect(timeline.body.data).toEqual([]);
    const [entry] = await log(company.liveToken, source.id);
    expect(entry).toMatchObject({ status: 'rejected', webhook_id: headers['webhook-id'], results: [] });
    expect(entry.reason).toContain('/checkpoints/1');
    // The webhook-id is not taken: the corrected message with it is received.
    const fixed = body.replace('"XX"', '"DE"');
    const retried = await post(
      source.url,
      fixed,
      signedHeaders(source.secret, fixed, { at: w.clock.now(), id: headers['webhook-id'] }),
    );
    expect(retried.body).toEqual({ accepted: 2, duplicates: 0, unmatched: 0 });
  });

  it("never matches another company's number, a shipment of the other mode or of another merchant", async () => {
    const foreign = await createShipment(w, other.liveToken);
    const testShipment = await createShipment(w, company.testToken);
    const merchantA = await createMerchant(w, company);
    const merchantB = await createMerchant(w, company);
    const ofB = await createShipment(w, merchantB.token);
    const liveSource = await createSource(company.liveToken);
    const merchantSource = await createSource(merchantA.token);
    expect(merchantSource.customer_account_id).toBe(merchantA.accountId);

    for (const [source, numbers] of [
      [liveSource, [foreign.tracking_number, testShipment.tracking_number]],
      [merchantSource, [ofB.tracking_number, foreign.tracking_number]],
    ] as const) {
      const body = batch([...numbers]);
      const answer = await post(source.url, body, signedHeaders(source.secret, body, { at: w.clock.now() }));
      expect(answer.status).toBe(202);
      expect(answer.body).toEqual({ accepted: 0, duplicates: 0, unmatched: 2 });
    }
    // The merchant source does reach its own merchant's shipments.
    const ofA = await createShipment(w, merchantA.token);
    const own = batch([ofA.tracking_number]);
    const reached = await post(
      merchantSource.url,
      own,
      signedHeaders(merchantSource.secret, own, { at: w.clock.now() }),
    );
    expect(reached.body).toEqual({ accepted: 1, duplicates: 0, unmatched: 0 });
    const [ownEntry] = await log(merchantA.token, merchantSource.id);
    expect(ownEntry.results[0]).toMatchObject({ shipment_id: ofA.id, outcome: 'applied' });
    // Nothing reached the others' shipments.
    for (const [shipment, token] of [
      [foreign, other.liveToken],
      [testShipment, company.testToken],
      [ofB, merchantB.token],
    ] as const) {
      const timeline = await call(w, 'GET', `/v1/shipments/${shipment.id}/checkpoints`, { token });
      expect(timeline.body.data).toEqual([]);
    }

    const testSource = await createSource(company.testToken);
    const live = await createShipment(w, company.liveToken);
    const body = batch([live.tracking_number]);
    const answer = await post(
      testSource.url,
      body,
      signedHeaders(testSource.secret, body, { at: w.clock.now() }),
    );
    expect(answer.body).toEqual({ accepted: 0, duplicates: 0, unmatched: 1 });
    const [entry] = await log(company.testToken, testSource.id);
    expect(entry.results).toEqual([
      { index: 0, shipment_id: null, checkpoint_id: null, outcome: 'unmatched' },
    ]);
  });

  it('refuses a bad signature, an old timestamp and missing headers with 401, logged without the body', async () => {
    const source = await createSource(company.liveToken);
    const shipment = await createShipment(w, company.liveToken);
    const body = batch([shipment.tracking_number], { status: 'in_transit' });
    const now = w.clock.now();
    const forged = signedHeaders('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', body, { at: now });
    const old = signedHeaders(source.secret, body, { at: new Date(now.getTime() - 5 * 60_000 - 1000) });
    const future = signedHeaders(source.secret, body, { at: new Date(now.getTime() + 6 * 60_000) });
    const good = signedHeaders(source.secret, body, { at: now });
    const tampered = { ...good, 'webhook-id': 'msg_other' };
    const cases: Array<[Record<string, string>, string]> = [
      [forged, 'bad_signature'],
      [tampered, 'bad_signature'],
      [old, 'timestamp_out_of_range'],
      [future, 'timestamp_out_of_range'],
      [{ 'content-type': 'application/json' }, 'missing_headers'],
      [{ ...good, 'webhook-signature': '' }, 'missing_headers'],
    ];
    for (const [headers, reason] of cases) {
      const answer = await post(source.url, body, headers);
      expect(answer.status, reason).toBe(401);
      expect(answer.body.code).toBe('inbound.signature_invalid');
      expect(answer.body.reason).toBe(reason);
    }
    const entries = await log(company.liveToken, source.id);
    expect(entries).toHaveLength(cases.length);
    expect(entries.map((e) => e.status)).toEqual(cases.map(() => 'rejected'));
    expect(entries.map((e) => e.reason.split(':')[0]).reverse()).toEqual(cases.map(([, reason]) => reason));
    // Nothing of the body is kept: not the number, not the message.
    const stored = await w.ctx.db
      .selectFrom('inbound_messages')
      .selectAll()
      .where('source_id', '=', source.id)
      .execute();
    expect(JSON.stringify(stored)).not.toContain(shipment.tracking_number);
    expect(JSON.stringify(stored)).not.toContain('Scanned at the hub');
    // Nothing was applied.
    const after = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(after.body.status).toBe(shipment.status);
    expect(after.body.updated_at).toBe(shipment.updated_at);

    // A rejected message does not take its webhook-id: the real one with that id is received.
    const real = await post(source.url, batch(['WB-X']), {
      ...signedHeaders(source.secret, batch(['WB-X']), { at: now, id: forged['webhook-id'] }),
    });
    expect(real.status).toBe(202);
    expect(real.body.duplicates).toBe(0);
  });

  it('refuses a body that does not hold after its signature does, logged rejected, nothing applied', async () => {
    const source = await createSource(company.liveToken);
    const bodies: Array<[string, number]> = [
      [JSON.stringify({ checkpoints: [] }), 400],
      [batch(Array.from({ length: 501 }, (_, i) => `WB-${i}`)), 400],
      [
        JSON.stringify({ checkpoints: [{ occurred_at: '2026-11-21T11:00:00.000Z', message: 'No number' }] }),
        400,
      ],
      ['{"checkpoints": [', 400],
    ];
    for (const [body, status] of bodies) {
      const answer = await post(source.url, body, signedHeaders(source.secret, body, { at: w.clock.now() }));
      expect(answer.status, body.slice(0, 40)).toBe(status);
    }
    const entries = await log(company.liveToken, source.id);
    expect(entries.map((e) => e.status)).toEqual(bodies.map(() => 'rejected'));
    expect(entries.every((e) => e.reason.startsWith('invalid_body') && e.results.length === 0)).toBe(true);
  });

  it('verifies the bytes whatever their content type says, and without one', async () => {
    const source = await createSource(company.liveToken);
    const body = batch(['WB-TYPES']);
    for (const type of ['text/plain', 'application/json; charset=utf-8', undefined]) {
      const { 'content-type': _json, ...headers } = signedHeaders(source.secret, body, { at: w.clock.now() });
      const response = await w.app.inject({
        method: 'POST',
        url: `/inbound/${source.id}`,
        payload: Buffer.from(body),
        headers: type ? { ...headers, 'content-type': type } : headers,
      });
      expect(response.statusCode, String(type)).toBe(202);
    }
  });

  it("keeps the log 30 days (the housekeeping job), the source's own messages only", async () => {
    const source = await createSource(company.liveToken);
    const body = batch(['WB-OLD']);
    await post(source.url, body, signedHeaders(source.secret, body, { at: w.clock.now() }));
    const job = housekeeping.find((j) => j.name === 'inbound-log');
    expect(job).toBeDefined();
    w.clock.advance(29 * 24 * 3600_000);
    await job?.run(w.ctx);
    expect(await log(company.liveToken, source.id)).toHaveLength(1);
    w.clock.advance(2 * 24 * 3600_000);
    await job?.run(w.ctx);
    expect(await log(company.liveToken, source.id)).toEqual([]);
  });

  it('refuses a body over 1 MB with 413', async () => {
    const source = await createSource(company.liveToken);
    const body = JSON.stringify({
      checkpoints: [{ tracking_number: 'WB-1', message: 'x'.repeat(1024 * 1024) }],
    });
    const answer = await post(source.url, body, signedHeaders(source.secret, body, { at: w.clock.now() }));
    expect(answer.status).toBe(413);
    expect(await log(company.liveToken, source.id)).toEqual([]);
  });

  it('takes 100 messages a second per source, then 429 with Retry-After until the next second', async () => {
    const source = await createSource(company.liveToken);
    const neighbour = await createSource(company.liveToken);
    w.clock.set('2026-11-21T12:10:00.250Z');
    const body = batch(['WB-RATE']);
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        post(source.url, body, signedHeaders(source.secret, body, { at: w.clock.now() })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 202));
    const over = await post(source.url, body, signedHeaders(source.secret, body, { at: w.clock.now() }));
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('1');
    // Another source has its own count.
    const apart = await post(
      neighbour.url,
      body,
      signedHeaders(neighbour.secret, body, { at: w.clock.now() }),
    );
    expect(apart.status).toBe(202);
    w.clock.advance(750);
    const next = await post(source.url, body, signedHeaders(source.secret, body, { at: w.clock.now() }));
    expect(next.status).toBe(202);
  });

  it('rotates the secret: the old one verifies for 24 hours, then only the new one', async () => {
    const source = await createSource(company.liveToken);
    const rotated = await call(w, 'POST', `/v1/inbound-sources/${source.id}/secret/rotate`, {
      token: company.liveToken,
    });
    expect(rotated.status).toBe(200);
    expect(Object.keys(rotated.body)).toEqual(['secret']);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(source.secret);
    const body = batch(['WB-ROT']);
    const send = (secret: string) =>
      post(source.url, body, signedHeaders(secret, body, { at: w.clock.now() }));
    expect((await send(source.secret)).status).toBe(202);
    expect((await send(rotated.body.secret)).status).toBe(202);
    w.clock.advance(24 * 3600_000 - 1000);
    expect((await send(source.secret)).status).toBe(202);
    w.clock.advance(2000);
    expect((await send(source.secret)).status).toBe(401);
    expect((await send(rotated.body.secret)).status).toBe(202);
  });
});

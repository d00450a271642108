import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signedHeaders } from './signing.ts';

/**
 * Issue 51 item 7: a message's checkpoints are applied as one batch (applyCheckpointsIn). A batch
 * of 100 must end exactly where the same checkpoints sent one at a time to
 * POST /v1/shipments/{id}/checkpoints end: the same outcomes, shipments, timelines and events.
 */

const SHIPMENTS = 20;
const hour = (h: number) => new Date(Date.UTC(2026, 10, 21, 8 + h)).toISOString();
const estimate = (day: number) => ({
  earliest: `2026-11-${day}T08:00:00.000Z`,
  latest: `2026-11-${day}T18:00:00.000Z`,
  source: 'carrier',
});
const proof = { method: 'signature', signed_by: 'A. Lovelace', received_at: '2026-11-21T12:00:00Z' };

/**
 * Five checkpoints for shipment k (a number of its own set): forward with skips, estimates and a
 * proof; duplicates in the batch and from before; older and backward ones; exception and back;
 * sub-status and estimate only; one that matches nothing; text an array literal must escape.
 */
function checkpointsOf(k: number): Array<Record<string, unknown>> {
  const ext = (j: number) => `scan-${k}-${j}`;
  switch (k % 5) {
    case 0:
      return [
        { status: 'picked_up', occurred_at: hour(0), estimated_delivery: estimate(23), external_id: ext(0) },
        {
          status: 'out_for_delivery',
          sub_status: 'out_for_delivery.on_vehicle',
          occurred_at: hour(1),
          estimated_delivery: estimate(24),
          external_id: ext(1),
        },
        {
          status: 'delivered',
          sub_status: 'delivered.recipient',
          proof_of_delivery: proof,
          occurred_at: hour(2),
          external_id: ext(2),
        },
        { status: 'in_transit', occurred_at: hour(3), external_id: ext(3) },
        { occurred_at: hour(4), message: 'NULL' },
      ];
    case 1:
      return [
        { status: 'in_transit', occurred_at: hour(0), external_id: `dup-${k}` },
        { status: 'delivered', occurred_at: hour(1), external_id: `dup-${k}`, message: 'Other text' },
        { status: 'out_for_delivery', occurred_at: hour(1), external_id: `seed-${k}` },
        { status: 'out_for_delivery', occurred_at: hour(-1), external_id: ext(3) },
        {
          occurred_at: hour(2),
          message: 'He said "{left, right}" \\ back\\slash, and NULL',
          location: {
            city: 'Saint-Étienne',
            region: 'Auvergne-Rhône-Alpes',
            country: 'fr',
            lat: 45.43,
            lng: 4.39,
          },
        },
      ];
    case 2:
      return [
        { status: 'exception', sub_status: 'exception.address_issue', occurred_at: hour(0) },
        { status: 'in_transit', occurred_at: hour(1) },
        { status: 'picked_up', occurred_at: hour(2) },
        { status: 'in_transit', sub_status: 'in_transit.customs', occurred_at: hour(3) },
        { unmatched: true, occurred_at: hour(4) },
      ];
    case 3:
      return [
        { sub_status: 'confirmed.awaiting_pickup', occurred_at: hour(0), estimated_delivery: estimate(25) },
        { occurred_at: hour(1), estimated_delivery: estimate(25) },
        { status: 'picked_up', occurred_at: hour(2), estimated_delivery: estimate(22) },
        { status: 'picked_up', occurred_at: hour(2), sub_status: 'picked_up.dropped_off' },
        { status: 'returned', occurred_at: hour(3) },
      ];
    default:
      return [
        { status: 'picked_up', occurred_at: hour(0), external_id: ext(0), by_carrier: true },
        { status: 'in_transit', occurred_at: hour(1), external_id: ext(1), by_carrier: true },
        { status: 'out_for_delivery', occurred_at: hour(2), external_id: ext(2), by_carrier: true },
        {
          status: 'delivered',
          occurred_at: hour(3),
          proof_of_delivery: proof,
          external_id: ext(3),
          by_carrier: true,
        },
        { status: 'in_transit', occurred_at: hour(4), external_id: ext(4), by_carrier: true },
      ];
  }
}

describe('a batch of 100 checkpoints, applied set-wise', () => {
  let w: TestWaybill;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
  });
  afterAll(async () => {
    await w?.close();
  });

  const get = async (path: string) => {
    const response = await call(w, 'GET', path, { token: company.liveToken });
    expect(response.status, path).toBe(200);
    return response.body;
  };

  /** Two identical sets of shipments, each shipment seeded with one checkpoint by the API. */
  async function shipments(set: 'A' | 'B'): Promise<Json[]> {
    const made: Json[] = [];
    for (let k = 0; k < SHIPMENTS; k++) {
      const shipment = await createShipment(w, company.liveToken, {
        carrier_tracking_number: `CC-${set}-${k}`,
      });
      const seeded = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
        token: company.liveToken,
        body: { occurred_at: hour(-2), message: 'Label created', external_id: `seed-${k}` },
      });
      expect(seeded.status).toBe(201);
      made.push(shipment);
    }
    return made;
  }

  /** JSON with every object's keys sorted: objects are unordered (jsonb reorders what it stores). */
  const canonical = (value: unknown): string =>
    JSON.stringify(value, (_key, v) =>
      v && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
        : v,
    );

  /** What a set's shipments ended as, with the set's own ids and numbers named by position. */
  async function endState(made: Json[]): Promise<string[]> {
    const states: string[] = [];
    for (const [k, shipment] of made.entries()) {
      const found = await get(`/v1/shipments/${shipment.id}`);
      const line = await get(`/v1/shipments/${shipment.id}/checkpoints?limit=100`);
      const events = await get(`/v1/events?shipment_id=${shipment.id}&limit=100`);
      const payloads = events.data.map((e: Json) => e.payload as string);
      expect(payloads.length).toBeLessThan(100);
      const normal = (text: string) =>
        text
          .replaceAll(shipment.id, `shipment-${k}`)
          .replaceAll(shipment.tracking_number, `number-${k}`)
          .replace(/CC-[AB]-/g, 'CC-')
          .replace(/"source":"(api|inbound)"/g, '"source":"?"')
          .replace(/\/t\/[0-9A-Za-z]+/g, '/t/token')
          .replace(/\b(chk|evt)_[0-9A-Za-z]+/g, '$1');
      // The events in their order in time (within one instant, as the contract ranks types), then by content.
      const rank = (type: string) =>
        type === 'shipment.created' ? 0 : type === 'shipment.status_changed' ? 1 : 2;
      const ordered = payloads
        .map((p: string) => ({ parsed: JSON.parse(p), text: normal(canonical(JSON.parse(p))) }))
        .sort(
          (a: Json, b: Json) =>
            a.parsed.created_at.localeCompare(b.parsed.created_at) ||
            rank(a.parsed.type) - rank(b.parsed.type) ||
            a.text.localeCompare(b.text),
        )
        .map((e: Json) => e.text);
      states.push(
        // Checkpoints of one occurred_at are listed by id, which differs between the sets: by content here.
        normal(canonical({ shipment: found })),
        ...line.data
          .map((c: Json) => ({ at: c.occurred_at as string, text: normal(canonical(c)) }))
          .sort((x: Json, y: Json) => y.at.localeCompare(x.at) || x.text.localeCompare(y.text))
          .map((c: Json) => c.text),
        ...ordered,
      );
    }
    return states;
  }

  // About 300 requests (two sets of 20 shipments, 100 checkpoints one at a time, the reads): a longer timeout.
  it('ends where the same checkpoints one at a time end: outcomes, shipments, timelines, events', async () => {
    const a = await shipments('A');
    const b = await shipments('B');
    const source = (
      await call(w, 'POST', '/v1/inbound-sources', {
        token: company.liveToken,
        body: { name: 'Batch feed', carrier_code: 'city-courier' },
      })
    ).body;

    const checkpoints: Array<{ k: number; entry: Record<string, unknown> }> = [];
    for (let j = 0; j < 5; j++) {
      // Interleaved as a carrier's feed is: every shipment's first scan, then every second one...
      for (let k = 0; k < SHIPMENTS; k++) {
        const entry = checkpointsOf(k)[j] as Record<string, unknown>;
        checkpoints.push({ k, entry });
      }
    }
    expect(checkpoints).toHaveLength(100);
    const inputOf = (entry: Record<string, unknown>) => {
      const { unmatched: _u, by_carrier: _c, ...input } = entry;
      return { message: 'Scanned at the hub', location: { city: 'Leipzig', country: 'DE' }, ...input };
    };

    const body = JSON.stringify({
      checkpoints: checkpoints.map(({ k, entry }) => ({
        ...(entry.unmatched
          ? { tracking_number: `WB-NOBODY-${k}` }
          : entry.by_carrier
            ? { carrier_tracking_number: `CC-A-${k}` }
            : { tracking_number: (a[k] as Json).tracking_number }),
        ...inputOf(entry),
      })),
    });
    const answer = await fetch(source.url, {
      method: 'POST',
      body,
      headers: signedHeaders(source.secret, body, { at: w.clock.now() }),
    });
    expect(answer.status).toBe(202);
    const [entry] = (await get(`/v1/inbound-sources/${source.id}/messages`)).data;
    const batchOutcomes = entry.results.map((r: Json) => r.outcome);

    // The same checkpoints one at a time, through the REST API, to the other set.
    const oneByOne: string[] = [];
    for (const { k, entry: checkpoint } of checkpoints) {
      if (checkpoint.unmatched) {
        oneByOne.push('unmatched');
        continue;
      }
      const response = await call(w, 'POST', `/v1/shipments/${(b[k] as Json).id}/checkpoints`, {
        token: company.liveToken,
        body: inputOf(checkpoint),
      });
      expect(response.status, response.text).toBeLessThan(300);
      oneByOne.push(
        response.status === 200 ? 'duplicate' : response.body.applied ? 'applied' : 'not_applied',
      );
    }

    expect(batchOutcomes).toEqual(oneByOne);
    const count = (outcome: string) => batchOutcomes.filter((o: string) => o === outcome).length;
    // Every kind of outcome is there.
    expect([count('applied'), count('not_applied'), count('duplicate'), count('unmatched')]).toEqual([
      68, 20, 8, 4,
    ]);
    const answered = await answer.json();
    expect(answered).toEqual({ accepted: 88, duplicates: 8, unmatched: 4 });
    expect(entry.status).toBe('partly_applied');
    // A duplicate answers the checkpoint it repeats (from the batch, or from before).
    const dup = entry.results[20 + 1];
    expect(dup.outcome).toBe('duplicate');
    expect(dup.checkpoint_id).toBe(entry.results[1].checkpoint_id);

    expect(await endState(a)).toEqual(await endState(b));
    // And the end states are what the rules say.
    const delivered = await get(`/v1/shipments/${(a[0] as Json).id}`);
    expect(delivered).toMatchObject({ status: 'delivered', sub_status: 'delivered.recipient' });
    expect(delivered.proof_of_delivery).toMatchObject({ method: 'signature' });
    expect(delivered.latest_checkpoint.message).toBe('NULL');
    const tricky = await get(`/v1/shipments/${(a[1] as Json).id}/checkpoints`);
    expect(tricky.data[0].message).toBe('He said "{left, right}" \\ back\\slash, and NULL');
    expect(tricky.data[0].location).toMatchObject({ city: 'Saint-Étienne', country: 'FR' });
  }, 180_000);
});

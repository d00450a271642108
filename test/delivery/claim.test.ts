import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue } from '../../src/delivery/claim.ts';
import { call, createApiToken, createCompany, createShipment, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { insertEndpoint } from './support.ts';

let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

/** Three endpoints of one company, in the order the claim walks them (by id). */
async function threeEndpoints(): Promise<{ token: string; ids: string[] }> {
  const company = await createCompany(w);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const endpoint = await insertEndpoint(w, {
      tenantId: company.tenantId,
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['shipment.created'],
    });
    ids.push(endpoint.id);
  }
  return { token: company.liveToken, ids: ids.sort() };
}

function claim(request: {
  after: string;
  room?: Map<string, number>;
  walkTargets?: number;
  limit?: number;
  targets?: string[];
}) {
  const now = w.clock.now();
  // The claim the worker makes on this database (on Citus, company by company).
  return claimDue(
    w.ctx.db,
    {
      workerId: 'wrk_test',
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      limit: request.limit ?? 100,
      perEndpoint: 4,
      room: request.room ?? new Map(),
      after: request.after,
      ...(request.walkTargets ? { walkTargets: request.walkTargets } : {}),
      ...(request.targets ? { targets: request.targets } : {}),
    },
    w.ctx.database.distributed,
  );
}

function countBy(rows: ReadonlyArray<{ endpoint_id: string }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of rows) counts[row.endpoint_id] = (counts[row.endpoint_id] ?? 0) + 1;
  return counts;
}

/** Marks everything done, so that the next test starts with an empty queue. */
async function finishAll(): Promise<void> {
  await w.ctx.db
    .updateTable('webhook_deliveries')
    .set({ status: 'succeeded', next_attempt_at: null, due_at: null })
    .where('status', '=', 'pending')
    .execute();
}

describe('the claim walks the targets in turn', () => {
  it('takes the room of each target, and goes on where the last claim stopped', async () => {
    const { token, ids } = await threeEndpoints();
    const [a, b, c] = ids as [string, string, string];
    for (let i = 0; i < 6; i++) await createShipment(w, token, { external_ref: `walk-${i}` });

    // Two targets a claim: A and B get their room of 4, and the next claim begins after B.
    const first = await claim({ after: '', walkTargets: 2 });
    expect(countBy(first.rows)).toEqual({ [a]: 4, [b]: 4 });
    expect(first.next).toBe(b);
    const second = await claim({ after: first.next, walkTargets: 2 });
    expect(countBy(second.rows)).toEqual({ [c]: 4 });
    // C was the last target with work: the walk starts again from the first.
    expect(second.next).toBe('');
    // What the claims hold is not claimed again; what is left is.
    const third = await claim({ after: '' });
    expect(countBy(third.rows)).toEqual({ [a]: 2, [b]: 2, [c]: 2 });
    await finishAll();
  });

  it('skips a target with no room here, however much it has waiting, and serves the rest', async () => {
    const { token, ids } = await threeEndpoints();
    const [a, b, c] = ids as [string, string, string];
    for (let i = 0; i < 5; i++) await createShipment(w, token, { external_ref: `full-${i}` });
    // A is full here (a stuck endpoint holding all its slots); B has room for 1 more.
    const claimed = await claim({
      after: '',
      room: new Map([
        [a, 0],
        [b, 1],
      ]),
    });
    expect(countBy(claimed.rows)).toEqual({ [b]: 1, [c]: 4 });
    await finishAll();
  });

  it('gives a target that earned more room than a new one gets all of it (one busy endpoint drains at its pace)', async () => {
    const { token, ids } = await threeEndpoints();
    const [a, b] = ids as [string, string, string];
    for (let i = 0; i < 9; i++) await createShipment(w, token, { external_ref: `room-${i}` });
    // A answers fast and holds 10 more than a new target's 4; B is new here.
    const claimed = await claim({ after: '', walkTargets: 2, room: new Map([[a, 10]]) });
    expect(countBy(claimed.rows)).toEqual({ [a]: 9, [b]: 4 });
    await finishAll();
  });

  it('takes the oldest first within a target', async () => {
    const { token, ids } = await threeEndpoints();
    const [, , c] = ids as [string, string, string];
    for (let i = 0; i < 5; i++) await createShipment(w, token, { external_ref: `oldest-${i}` });
    const claimed = await claim({ after: '' });
    // Oldest first within a target.
    const cRows = claimed.rows.filter((row) => row.endpoint_id === c);
    const times = cRows.map((row) => new Date(row.next_attempt_at as Date).getTime());
    expect(times).toEqual([...times].sort((x, y) => x - y));
    await finishAll();
  });

  it('claims for the targets it is asked for (a listener hub), however many companies have older messages', async () => {
    // More companies with a message waiting longer than a claim on Citus asks the shards for
    // (one owner's: sign-ups are rate limited).
    const owner = await signUpPerson(w, 'Owner of many');
    for (let i = 0; i < 17; i++) {
      const company = await call(w, 'POST', '/v1/companies', {
        token: owner.token,
        body: { name: `Older ${i}` },
      });
      expect(company.status).toBe(201);
      const tenantId = company.body.id as string;
      await insertEndpoint(w, { tenantId, url: 'http://127.0.0.1:9/hook', eventTypes: ['shipment.created'] });
      const token = await createApiToken(w, owner, tenantId, { mode: 'live' });
      await createShipment(w, token, { external_ref: `older-${i}` });
    }
    w.clock.advance(1_000);
    const { token, ids } = await threeEndpoints();
    const [a] = ids as [string, string, string];
    await createShipment(w, token, { external_ref: 'asked-for' });
    const claimed = await claim({ after: '', targets: [a] });
    expect(countBy(claimed.rows)).toEqual({ [a]: 1 });
    await finishAll();
  });

  it('does not let companies whose targets can take nothing here keep the places from a company behind them', async () => {
    // More companies than a claim on Citus asks the shards for, each with an older message for a
    // target that has no room here: they must not hold every place, claim after claim.
    const owner = await signUpPerson(w, 'Owner of the full');
    const full = new Map<string, number>();
    for (let i = 0; i < 17; i++) {
      const company = await call(w, 'POST', '/v1/companies', {
        token: owner.token,
        body: { name: `Full ${i}` },
      });
      expect(company.status).toBe(201);
      const tenantId = company.body.id as string;
      const endpoint = await insertEndpoint(w, {
        tenantId,
        url: 'http://127.0.0.1:9/hook',
        eventTypes: ['shipment.created'],
      });
      full.set(endpoint.id, 0);
      const token = await createApiToken(w, owner, tenantId, { mode: 'live' });
      await createShipment(w, token, { external_ref: `full-${i}` });
    }
    w.clock.advance(1_000);
    const { token, ids } = await threeEndpoints();
    await createShipment(w, token, { external_ref: 'behind-the-full' });
    // As the worker does: each claim from where the last one stopped, until round.
    const claimed: { endpoint_id: string }[] = [];
    let after = '';
    for (let claims = 0; claims < 3; claims++) {
      const next = await claim({ after, room: full });
      claimed.push(...next.rows);
      after = next.next;
      if (after === '') break;
    }
    expect(countBy(claimed)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    await finishAll();
  });

  it('does not claim for a disabled or held target', async () => {
    const { token, ids } = await threeEndpoints();
    const [a, b, c] = ids as [string, string, string];
    await createShipment(w, token, { external_ref: 'held' });
    await w.ctx.db.updateTable('webhook_endpoints').set({ held: true }).where('id', '=', a).execute();
    await w.ctx.db.updateTable('webhook_endpoints').set({ enabled: false }).where('id', '=', b).execute();
    const claimed = await claim({ after: '' });
    expect(countBy(claimed.rows)).toEqual({ [c]: 1 });
    await finishAll();
  });
});

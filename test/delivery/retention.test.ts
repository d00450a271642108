import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { attemptPartitions } from '../../src/delivery/partitions.ts';
import { purgeWebhookHistory } from '../../src/delivery/retention.ts';
import { DAY } from '../../src/lib/clock.ts';
import { createCompany, createShipment } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';
import { type Answer, deliveriesOf, insertEndpoint, testWorker, useWaybillAndReceiver } from './support.ts';

/**
 * Where each attempt is stored: its day partition, or the default one. Each partition is read by
 * its name (on Citus a row's tableoid is its shard's, on a worker node).
 */
async function attemptHomes(w: TestWaybill): Promise<Array<{ delivery_id: string; home: string }>> {
  const homes = [...(await attemptPartitions(w.ctx)), 'webhook_attempts_default'];
  const { rows } = await sql<{ delivery_id: string; home: string }>`
    SELECT a.delivery_id, a.home FROM (${sql.join(
      homes.map(
        (home) => sql`SELECT delivery_id, attempted_at, ${home}::text AS home FROM ONLY ${sql.id(home)}`,
      ),
      sql` UNION ALL `,
    )}) a
    ORDER BY a.attempted_at, a.delivery_id`.execute(w.ctx.db);
  return rows;
}

/** A receiver that is down: each attempt fails and is kept as a row of its own. */
const failing: Answer = (_m, res) => {
  res.statusCode = 503;
  res.end('busy');
};

describe('history retention', () => {
  const env = useWaybillAndReceiver();

  it('keeps attempts in day partitions and drops a day whole once it is 30 days old', async () => {
    const { w, receiver } = env;
    // The receiver is down for the first attempt: a failure, and the retry that succeeds later, are
    // rows of their own (a first success is kept in its delivery, decision 0060).
    receiver.answer = failing;
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);

    // The clock starts at 2026-11-21T12:00Z: the job makes that day and the three after it.
    expect(await purgeWebhookHistory(w.ctx)).toEqual({
      deliveries: 0,
      events: 0,
      attempts: 0,
      droppedDays: [],
    });
    expect(await attemptPartitions(w.ctx)).toEqual([
      'webhook_attempts_p20261121',
      'webhook_attempts_p20261122',
      'webhook_attempts_p20261123',
      'webhook_attempts_p20261124',
    ]);
    await createShipment(w, company.liveToken);
    await worker.tick();
    receiver.answer = (_m, res) => res.end('ok');

    // Ten days on, no partition covers the day yet: the default partition takes the first
    // delivery's retry, and the next run of the job moves it into the day it makes. The second
    // delivery's first attempt succeeds: it is kept in that delivery, not in a partition.
    w.clock.advance(10 * DAY);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const [first, second] = await deliveriesOf(w, endpoint.id);
    expect(second?.status).toBe('succeeded');
    expect(await attemptHomes(w)).toEqual([
      { delivery_id: first?.id, home: 'webhook_attempts_p20261121' },
      { delivery_id: first?.id, home: 'webhook_attempts_default' },
    ]);
    await purgeWebhookHistory(w.ctx);
    expect(await attemptHomes(w)).toEqual([
      { delivery_id: first?.id, home: 'webhook_attempts_p20261121' },
      { delivery_id: first?.id, home: 'webhook_attempts_p20261201' },
    ]);

    // 30 days after the first delivery it goes; its day stays until the whole day is 30 days old.
    w.clock.advance(20 * DAY + 1);
    const purged = await purgeWebhookHistory(w.ctx);
    expect(purged).toMatchObject({ deliveries: 1, attempts: 0, droppedDays: [] });
    expect((await deliveriesOf(w, endpoint.id)).map((d) => d.id)).toEqual([second?.id]);

    w.clock.advance(12 * 60 * 60 * 1000);
    const later = await purgeWebhookHistory(w.ctx);
    expect(later.droppedDays).toEqual(['webhook_attempts_p20261121']);
    // The first delivery went at 30 days; its retry's row stays with its day (decision 0015).
    expect(await attemptHomes(w)).toEqual([{ delivery_id: first?.id, home: 'webhook_attempts_p20261201' }]);
    expect(await attemptPartitions(w.ctx)).not.toContain('webhook_attempts_p20261121');
  });

  it('removes row by row what the default partition holds past 30 days', async () => {
    const { w, receiver } = env;
    receiver.answer = failing;
    const company = await createCompany(w);
    await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    w.clock.advance(100 * DAY);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const before = await attemptHomes(w);
    expect(before.at(-1)?.home).toBe('webhook_attempts_default');

    w.clock.advance(31 * DAY);
    const purged = await purgeWebhookHistory(w.ctx);
    expect(purged.attempts).toBeGreaterThanOrEqual(1);
    expect((await attemptHomes(w)).filter((a) => a.home === 'webhook_attempts_default')).toEqual([]);
  });

  it('removes the attempts of an endpoint with the endpoint', async () => {
    const { w, receiver } = env;
    receiver.answer = (_m, res) => res.end('ok');
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const count = () =>
      w.ctx.db
        .selectFrom('webhook_attempt_log')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('endpoint_id', '=', endpoint.id)
        .executeTakeFirstOrThrow();
    expect(Number((await count()).n)).toBe(1);
    const deleted = await fetch(`${w.url}/v1/webhook-endpoints/${endpoint.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${company.liveToken}` },
    });
    expect(deleted.status).toBe(204);
    expect(Number((await count()).n)).toBe(0);
  });
});

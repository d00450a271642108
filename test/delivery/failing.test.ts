import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FinishedAttempt, recordAttempts } from '../../src/delivery/record.ts';
import { DAY, HOUR } from '../../src/lib/clock.ts';
import { call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  deliveriesOf,
  endpointRow,
  insertEndpoint,
  type Receiver,
  runSchedule,
  startReceiver,
  testWorker,
} from './support.ts';

interface Mail {
  to: string[];
  text: string;
}

describe('the 3-day rule', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let smtp: SMTPServer;
  const mails: Mail[] = [];
  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          mails.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            text: Buffer.concat(chunks).toString(),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const { port } = smtp.server.address() as AddressInfo;
    w = await startWaybill({ env: { WAYBILL_SMTP_URL: `smtp://127.0.0.1:${port}` } });
    receiver = await startReceiver((_m, res) => {
      res.statusCode = 503;
      res.end();
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
    await new Promise<void>((resolve) => smtp?.close(() => resolve()));
  });

  it('disables an endpoint failing for 3 days, cancels what waited, and e-mails its people', async () => {
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, {
      tenantId: company.tenantId,
      url: receiver.url,
      createdBy: company.owner.id,
    });
    const worker = testWorker(w);
    const started = w.clock.now();
    await createShipment(w, company.liveToken);
    await worker.tick();
    const streak = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select('failing_since')
      .where('id', '=', endpoint.id)
      .executeTakeFirstOrThrow();
    expect(new Date(streak.failing_since as Date).getTime()).toBe(started.getTime());

    // One message's schedule ends before 3 days; new messages keep the streak going.
    await runSchedule(w, endpoint.id, worker, new Date(started.getTime() + 2 * DAY));
    await createShipment(w, company.liveToken);
    await worker.tick();
    await runSchedule(w, endpoint.id, worker, new Date(started.getTime() + 10 * DAY));
    await createShipment(w, company.liveToken);
    await worker.stop();

    const row = await endpointRow(w, endpoint.id);
    expect(row.enabled).toBe(false);
    expect(row.disabled_reason).toBe('failing');
    // Disabled when the first message used its 9th attempt (about 68.6 h) with no 2xx since its
    // first: waiting for a failure at 72 h could wait for ever.
    const disabledAfter = new Date(row.updated_at).getTime() - started.getTime();
    expect(disabledAfter).toBeGreaterThanOrEqual(68 * HOUR);
    expect(disabledAfter).toBeLessThan(3 * DAY);
    const deliveries = await deliveriesOf(w, endpoint.id);
    expect(deliveries.some((d) => d.status === 'cancelled')).toBe(true);
    expect(deliveries.filter((d) => d.status === 'pending')).toHaveLength(0);
    // A disabled endpoint gets nothing new (the last shipment above made no delivery).
    expect(deliveries).toHaveLength(2);

    // (Sign-up's verification links went over the same SMTP server: not these.)
    const told = mails.filter((mail) => !mail.text.includes('Subject: Confirm your e-mail address'));
    expect(told).toHaveLength(1);
    expect(told[0]?.to).toEqual([company.owner.email]);
    expect(told[0]?.text).toContain(endpoint.id);
  });

  it('disables at the 9th failed attempt of a single message when time passes during each send', async () => {
    // In production the clock moves while a message is in flight: the streak must begin when the
    // first attempt was made, not when its outcome was written, or the rule never fires.
    const company = await createCompany(w);
    const slow = await startReceiver((_m, res) => {
      w.clock.advance(1500);
      res.statusCode = 503;
      res.end();
    });
    try {
      const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: slow.url });
      const worker = testWorker(w);
      const started = w.clock.now();
      await createShipment(w, company.liveToken);
      await worker.tick();
      const streak = await endpointRow(w, endpoint.id);
      expect(new Date(streak.failing_since as Date).getTime()).toBe(started.getTime());
      await runSchedule(w, endpoint.id, worker, new Date(started.getTime() + 5 * DAY));
      await worker.stop();
      const [delivery] = await deliveriesOf(w, endpoint.id);
      expect(delivery?.attempt_count).toBe(9);
      const row = await endpointRow(w, endpoint.id);
      expect(row.enabled).toBe(false);
      expect(row.disabled_reason).toBe('failing');
      const disabledAfter = new Date(row.updated_at).getTime() - started.getTime();
      expect(disabledAfter).toBeGreaterThanOrEqual(68 * HOUR);
      expect(disabledAfter).toBeLessThan(3 * DAY);
    } finally {
      await slow.close();
    }
  });

  it('does not disable at a used-up schedule when the endpoint answered 2xx since that message began', async () => {
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    const started = w.clock.now();
    const failing = await createShipment(w, company.liveToken);
    await worker.tick();
    // Later messages of other shipments succeed; only the first shipment's keep failing.
    receiver.answer = (message, res) => {
      res.statusCode = message.body.includes(failing.id) ? 503 : 200;
      res.end();
    };
    w.clock.set(new Date(started.getTime() + HOUR));
    await createShipment(w, company.liveToken);
    await worker.tick();
    await runSchedule(w, endpoint.id, worker, new Date(started.getTime() + 5 * DAY));
    await worker.stop();
    const [first] = (await deliveriesOf(w, endpoint.id)).filter((d) => d.attempt_count === 9);
    expect(first?.status).toBe('failed');
    const row = await endpointRow(w, endpoint.id);
    expect(row.enabled).toBe(true);
    receiver.answer = (_m, res) => {
      res.statusCode = 503;
      res.end();
    };
  });

  it('starts the streak again when one batch holds a 2xx and a failure, whichever came last', async () => {
    // One batch, written as the recorder writes it: both attempts were in flight together.
    for (const order of ['failure last', '2xx last'] as const) {
      const company = await createCompany(w);
      const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
      await createShipment(w, company.liveToken);
      await createShipment(w, company.liveToken);
      const started = w.clock.now();
      await w.ctx.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: new Date(started.getTime() - HOUR) })
        .where('id', '=', endpoint.id)
        .execute();
      const [first, second] = await deliveriesOf(w, endpoint.id);
      if (!first || !second) throw new Error('two deliveries expected');
      const attempt = (delivery: typeof first, status: number): FinishedAttempt => ({
        delivery,
        trigger: 'scheduled',
        attemptedAt: started,
        headers: {},
        result: { status_code: status, response_head: null, duration_ms: 1, error: null },
        endpointFailing: true,
        targetKind: 'endpoint',
      });
      const failed = attempt(first, 503);
      const answered = attempt(second, 200);
      await recordAttempts(w.ctx, order === 'failure last' ? [answered, failed] : [failed, answered]);
      const row = await endpointRow(w, endpoint.id);
      // Not the old streak (the 2xx ended it), not none (a failure came with it): a new one, from now.
      expect(new Date(row.failing_since as Date).getTime(), order).toBe(started.getTime());
      expect(row.enabled, order).toBe(true);
    }
  });

  it('lets any 2xx end the streak', async () => {
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    const shipment = await createShipment(w, company.liveToken);
    await worker.tick();
    receiver.answer = (_m, res) => res.end('fine');
    await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    await worker.tick();
    await worker.stop();
    const row = await endpointRow(w, endpoint.id);
    expect(row.failing_since).toBeNull();
    expect(row.enabled).toBe(true);
  });
});

describe('the outbox without SMTP', () => {
  let w: TestWaybill;
  afterAll(async () => {
    await w?.close();
  });

  it('keeps the e-mail for the dev mailbox, shown only to its recipients', async () => {
    w = await startWaybill();
    const receiver = await startReceiver((_m, res) => {
      res.statusCode = 500;
      res.end();
    });
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, {
      tenantId: company.tenantId,
      url: receiver.url,
      createdBy: company.owner.id,
    });
    await w.ctx.db
      .updateTable('webhook_endpoints')
      .set({ failing_since: new Date(w.clock.now().getTime() - 3 * DAY) })
      .where('id', '=', endpoint.id)
      .execute();
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    await receiver.close();

    const mailboxOf = async (email: string) => {
      const session = await call(w, 'POST', '/v1/auth/sessions', {
        body: { email, password: 'correct horse battery' },
      });
      return w.app.inject({
        method: 'GET',
        url: '/dev/mailbox',
        cookies: { waybill_session: session.body.token },
      });
    };
    const page = await mailboxOf(company.owner.email);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('disabled a webhook endpoint');
    expect(page.body).toContain(endpoint.id);

    const stranger = await createCompany(w, 'Stranger');
    const other = await mailboxOf(stranger.owner.email);
    expect(other.statusCode).toBe(200);
    expect(other.body).not.toContain(endpoint.id);
    const signedOut = await w.app.inject({ method: 'GET', url: '/dev/mailbox' });
    expect(signedOut.statusCode).toBe(303);
  });
});

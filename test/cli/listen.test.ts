import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.ts';
import { type Receiver, startReceiver } from '../delivery/support.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Run, waybill } from './support.ts';

/**
 * `waybill listen` as a developer runs it: a child process against a running Waybill, forwarding
 * to a receiver on this machine that verifies every message with the standardwebhooks package.
 */

function runListen(args: string[]): Run {
  return waybill(['listen', ...args], {});
}

let w: TestWaybill;
let company: CompanyFixture;
let receiver: Receiver;
let secret = '';
const verified: Json[] = [];

beforeAll(async () => {
  // A clock at the real time: the receiver verifies timestamps against its own clock.
  w = await startWaybill({ clock: new ManualClock(new Date().toISOString()) });
  company = await createCompany(w);
  receiver = await startReceiver((message, res) => {
    try {
      verified.push(new Webhook(secret).verify(message.body, message.headers as Record<string, string>));
      res.writeHead(201).end('thanks');
    } catch {
      res.writeHead(400).end('bad signature');
    }
  });
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

describe('waybill listen', () => {
  it('forwards a shipment’s test events to a local receiver, and the delivery log records its answers', async () => {
    const command = runListen(['--api', w.url, '--token', company.testToken, '--forward-to', receiver.url]);
    try {
      const match = await eventually(
        async () =>
          /^Listener (we_\w+); its signing secret, to verify with: (whsec_\S+)$/m.exec(command.stdout()),
        'the command to be ready',
      );
      const [, listenerId, printed] = match as unknown as [string, string, string];
      secret = printed;

      const shipment = await createShipment(w, company.testToken, {
        status: 'confirmed',
        external_ref: 'cli-1',
      });
      const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
        token: company.testToken,
        body: { status: 'picked_up' },
      });
      expect(moved.status).toBe(200);

      await eventually(async () => verified.length >= 2, 'two verified messages');
      expect(verified.map((m) => m.type).sort()).toEqual(['shipment.created', 'shipment.status_changed']);
      expect(verified.every((m) => m.data.shipment.id === shipment.id && m.livemode === false)).toBe(true);

      const log = await eventually(async () => {
        const page = await call(w, 'GET', `/v1/webhook-endpoints/${listenerId}/deliveries`, {
          token: company.testToken,
        });
        const data = page.body.data as Json[];
        return data.length === 2 && data.every((d) => d.status === 'succeeded') ? data : undefined;
      }, 'the deliveries to be logged');
      for (const delivery of log) {
        const detail = await call(w, 'GET', `/v1/webhook-deliveries/${delivery.id}`, {
          token: company.testToken,
        });
        expect(detail.body.attempts).toHaveLength(1);
        expect(detail.body.attempts[0]).toMatchObject({
          status_code: 201,
          response_body: 'thanks',
          error: null,
        });
      }
      // One line per message: time, type, status, duration.
      expect(command.stdout()).toMatch(/^\S+Z {2}shipment\.created {2}201 {2}\d+ ms/m);
      expect(command.stdout()).toMatch(/^\S+Z {2}shipment\.status_changed {2}201 {2}\d+ ms/m);

      // Stopping removes the listener at once.
      command.child.kill('SIGINT');
      expect(await command.exited).toBe(0);
      const gone = await call(w, 'GET', `/v1/webhook-endpoints/${listenerId}`, { token: company.testToken });
      expect(gone.status).toBe(404);
    } finally {
      command.child.kill('SIGKILL');
    }
  });

  it('refuses a live key with a clear message', async () => {
    const command = runListen(['--api', w.url, '--token', company.liveToken, '--forward-to', receiver.url]);
    expect(await command.exited).toBe(1);
    expect(command.stderr()).toContain('Only a test API key (sk_test_...) may listen');
    expect(command.stderr()).toContain('webhook_listener.test_mode_only');
  });

  it('explains its options when one is missing', async () => {
    const command = runListen(['--api', w.url]);
    expect(await command.exited).toBe(2);
    expect(command.stderr()).toContain('Usage: waybill listen');
  });
});

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import websocket from '@fastify/websocket';
import Fastify from 'fastify';
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

  it('says in --help that the key is read from WAYBILL_API_KEY, and listens with the key from there', async () => {
    const help = runListen(['--help']);
    expect(await help.exited).toBe(0);
    expect(help.stdout()).toContain('WAYBILL_API_KEY');
    expect(help.stdout()).toMatch(/process list/);

    const command = waybill(['listen', '--api', w.url, '--forward-to', receiver.url], {
      WAYBILL_API_KEY: company.testToken,
    });
    try {
      const match = await eventually(
        async () => /^Listener (we_\w+); /m.exec(command.stdout()),
        'the command to be ready',
      );
      // The key is nowhere in the command line another user of the machine can read.
      expect(command.child.spawnargs.join(' ')).not.toContain(company.testToken);
      const listener = await call(w, 'GET', `/v1/webhook-endpoints/${(match as RegExpExecArray)[1]}`, {
        token: company.testToken,
      });
      expect(listener.status).toBe(200);
      command.child.kill('SIGINT');
      expect(await command.exited).toBe(0);
    } finally {
      command.child.kill('SIGKILL');
    }
  });

  it('logs and skips a frame that is not JSON (or not a message of the right shape), and keeps forwarding', async () => {
    // A stand-in for Waybill that sends what the real one never does.
    const results: Json[] = [];
    const seen: string[] = [];
    const fake = Fastify();
    await fake.register(websocket);
    fake.post('/v1/webhook-listeners', async (request, reply) => {
      seen.push(String(request.headers.authorization));
      return reply.code(201).send({ id: 'we_fake', secret: 'whsec_x', event_types: ['shipment.created'] });
    });
    fake.get('/v1/webhook-listeners/we_fake/connect', { websocket: true }, (socket) => {
      socket.on('message', (data: Buffer) => results.push(JSON.parse(String(data))));
      for (const frame of [
        'not json {',
        'null',
        '42',
        '{"type":"message","id":"m0"}',
        '{"type":"message","id":"m1","headers":null,"body":"x"}',
      ])
        socket.send(frame);
      socket.send(
        JSON.stringify({
          type: 'message',
          id: 'm2',
          headers: { 'content-type': 'application/json', 'webhook-event': 'shipment.created' },
          body: '{}',
        }),
      );
    });
    fake.delete('/v1/webhook-endpoints/we_fake', async (_request, reply) => reply.code(204).send());
    const fakeUrl = await fake.listen({ port: 0, host: '127.0.0.1' });
    const forwarded: string[] = [];
    const local = createServer((req, res) => {
      forwarded.push(String(req.headers['webhook-event']));
      req.resume();
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const localUrl = `http://127.0.0.1:${(local.address() as AddressInfo).port}/hook`;
    const command = waybill(['listen', '--api', fakeUrl, '--forward-to', localUrl], {
      WAYBILL_API_KEY: 'sk_test_fake',
    });
    try {
      await eventually(async () => results.length >= 1, 'the result of the good frame');
      expect(results).toEqual([expect.objectContaining({ type: 'result', id: 'm2', status_code: 204 })]);
      expect(forwarded).toEqual(['shipment.created']);
      expect(seen).toEqual(['Bearer sk_test_fake']);
      expect(command.stderr()).toContain('ignored a frame that is not JSON');
      expect(command.stderr()).toContain('ignored a message frame that is not well formed');
      // Still running, still connected.
      expect(command.child.exitCode).toBeNull();
      command.child.kill('SIGINT');
      expect(await command.exited).toBe(0);
    } finally {
      command.child.kill('SIGKILL');
      await new Promise((resolve) => local.close(resolve));
      await fake.close();
    }
  });
});

import { describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';
import { attemptsOf, deliveriesOf, testWorker, useWaybillAndReceiver, verify } from './support.ts';

/** An endpoint made through the API, with the controls given. */
async function createEndpoint(
  w: TestWaybill,
  company: CompanyFixture,
  url: string,
  controls: Record<string, unknown> = {},
): Promise<{ id: string; secret: string; body: Json }> {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token: company.liveToken,
    body: { url, event_types: ['shipment.created', 'shipment.status_changed'], ...controls },
  });
  if (created.status !== 201) throw new Error(`endpoint failed: ${created.text}`);
  return { id: created.body.id, secret: created.body.secret, body: created.body };
}

describe('custom headers (issue 23)', () => {
  const env = useWaybillAndReceiver();

  it('go with every message and test send; Waybill headers are never replaced; credentials are masked in the log', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url, {
      headers: { 'X-Route': 'eu-1', Authorization: 'Bearer sk_receiver_0123456789abcd' },
    });
    const worker = testWorker(w);
    const start = receiver.received.length;
    await createShipment(w, company.liveToken);
    expect(await worker.tick()).toBe(1);
    const tested = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, {
      token: company.liveToken,
    });
    expect(tested.status).toBe(200);
    await worker.stop();
    const messages = receiver.received.slice(start);
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      expect(message.headers['x-route']).toBe('eu-1');
      expect(message.headers.authorization).toBe('Bearer sk_receiver_0123456789abcd');
      expect(verify(message, endpoint.secret, w.clock.now())).toBeTruthy();
    }
    // The attempt log keeps the credential masked, as the API shows it.
    const [delivery] = await deliveriesOf(w, endpoint.id);
    const [attempt] = await attemptsOf(w, delivery?.id as string);
    expect(attempt?.request_headers).toMatchObject({ 'x-route': 'eu-1', authorization: '••••••••abcd' });
    const detail = await call(w, 'GET', `/v1/webhook-deliveries/${delivery?.id}`, {
      token: company.liveToken,
    });
    expect(JSON.stringify(detail.body)).not.toContain('sk_receiver_0123456789abcd');
  });

  it('cannot replace a header Waybill sets, even stored behind the API', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url);
    // Stored directly: the API refuses these names (422); the engine leaves them out again.
    const stored = {
      'Webhook-Id': 'msg_forged',
      'content-type': 'text/plain',
      'User-Agent': 'forged',
      Host: 'elsewhere.example',
      'x-split': 'a\r\nx-injected: yes',
      'X-Kept': 'kept',
    };
    await w.ctx.db
      .updateTable('webhook_endpoints')
      .set({ headers_sealed: w.ctx.secrets.seal(JSON.stringify(stored)) })
      .where('id', '=', endpoint.id)
      .execute();
    const worker = testWorker(w);
    const start = receiver.received.length;
    await createShipment(w, company.liveToken);
    expect(await worker.tick()).toBe(1);
    await worker.stop();
    const [message] = receiver.received.slice(start);
    expect(message?.headers['x-kept']).toBe('kept');
    expect(message?.headers['webhook-id']).toMatch(/^evt_/);
    expect(message?.headers['content-type']).toBe('application/json');
    expect(message?.headers['user-agent']).toMatch(/^Waybill-Webhooks/);
    expect(message?.headers.host).toBe(new URL(receiver.url).host);
    expect(message?.headers['x-split']).toBeUndefined();
    expect(message?.headers['x-injected']).toBeUndefined();
    if (message) expect(verify(message, endpoint.secret, w.clock.now())).toBeTruthy();
  });
});

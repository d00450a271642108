import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver as startDeliveryReceiver, testWorker } from '../../delivery/support.ts';
import { expectProblem } from '../../http/expect.ts';
import {
  type CompanyFixture,
  call,
  createApiToken,
  createCompany,
  createShipment,
} from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';

/**
 * Custom header values that come back masked (issue 30 item 3): a webhooks:write holder who cannot
 * read an endpoint's `authorization` cannot send it to a host of their own by changing the URL,
 * and a receiver that echoes the request's headers does not reveal them to webhooks:read.
 */
const CREDENTIAL = 'Bearer partner-credential-0123456789';

describe("an endpoint's custom header values stay with the endpoint", () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  /** The receiver the company set up, which echoes what it got. */
  const partner = startDeliveryReceiver((message, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: message.headers })),
  );
  /** A host of the attacker's. */
  const attacker = startDeliveryReceiver();
  let writer: string;
  let reader: string;

  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    writer = await createApiToken(w, company.owner, company.tenantId, {
      mode: 'test',
      scopes: ['webhooks:read', 'webhooks:write'],
      name: 'integration',
    });
    reader = await createApiToken(w, company.owner, company.tenantId, {
      mode: 'test',
      scopes: ['webhooks:read'],
      name: 'monitoring',
    });
  });
  afterAll(async () => {
    await (await partner).close();
    await (await attacker).close();
    await w?.close();
  });

  async function endpointWithCredential(): Promise<string> {
    const created = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: {
        url: (await partner).url,
        event_types: ['shipment.created'],
        headers: { Authorization: CREDENTIAL, 'X-Route': 'eu-1' },
      },
    });
    expect(created.status, created.text).toBe(201);
    return created.body.id as string;
  }

  it('a new url needs the headers stated in full or cleared (422 webhook_endpoint.headers_required)', async () => {
    const id = await endpointWithCredential();
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: writer });
    expect(read.body.headers.Authorization).not.toContain('partner-credential');
    const target = (await attacker).url;
    const patch = (body: Record<string, unknown>) =>
      call(w, 'PATCH', `/v1/webhook-endpoints/${id}`, { token: writer, body });

    expectProblem(await patch({ url: target }), 422, 'webhook_endpoint.headers_required');
    // Sending back what was read (the masked value) does not carry the value along either.
    const masked = await patch({ url: target, headers: read.body.headers });
    expectProblem(masked, 422, 'webhook_endpoint.headers_required');
    expect(masked.body.errors).toEqual([{ path: '/headers/Authorization', message: expect.any(String) }]);
    // Nothing changed.
    expect((await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: writer })).body.url).toBe(
      (await partner).url,
    );

    // Cleared with it: the test message reaches the new host without the credential.
    const moved = await patch({ url: target, headers: null });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.headers).toEqual({});
    const sent = await call(w, 'POST', `/v1/webhook-endpoints/${id}/test`, { token: writer, body: {} });
    expect(sent.status, sent.text).toBe(200);
    const received = (await attacker).received.at(-1);
    expect(received?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(received?.headers)).not.toContain('partner-credential');

    // Stated in full, they go with it; the same url, or other fields, need nothing restated.
    const restated = await patch({
      url: (await partner).url,
      headers: { Authorization: 'Bearer mine-0123456789ab' },
    });
    expect(restated.status, restated.text).toBe(200);
    expect((await patch({ url: (await partner).url, description: 'same url' })).status).toBe(200);
    expect((await patch({ description: 'no url' })).status).toBe(200);
  });

  it('an answer that echoes the headers is stored and shown with the credential masked', async () => {
    const id = await endpointWithCredential();
    const sent = await call(w, 'POST', `/v1/webhook-endpoints/${id}/test`, {
      token: company.testToken,
      body: {},
    });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.response_body).toContain('eu-1');
    expect(sent.body.response_body).not.toContain('partner-credential');

    // A scheduled delivery, made by the worker.
    await createShipment(w, company.testToken);
    const worker = testWorker(w);
    try {
      await worker.tick();
    } finally {
      await worker.stop();
    }
    const deliveries = await call(w, 'GET', `/v1/webhook-endpoints/${id}/deliveries`, { token: reader });
    expect(deliveries.body.data.length).toBe(2);
    for (const delivery of deliveries.body.data) {
      const detail = await call(w, 'GET', `/v1/webhook-deliveries/${delivery.id}`, { token: reader });
      expect(detail.status).toBe(200);
      expect(detail.body.attempts.length).toBeGreaterThan(0);
      for (const attempt of detail.body.attempts) {
        expect(attempt.response_body).toContain('eu-1');
        expect(attempt.response_body).toContain('6789');
        expect(attempt.response_body).not.toContain('partner-credential');
      }
      expect(JSON.stringify(detail.body)).not.toContain('partner-credential');
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { createEndpoint, type Receiver, startReceiver } from './support.ts';

/** Names the test resolver knows; anything else does not resolve (no real DNS in tests). */
const NAMES: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14'],
  'internal.example.com': ['10.0.0.5'],
  'mixed.example.com': ['93.184.215.14', '192.168.1.10'],
  'rebind.example.com': ['2606:2800:220:1::1', 'fd00:ec2::254'],
  localhost: ['127.0.0.1', '::1'],
};

function useTestResolver(w: TestWaybill): void {
  w.ctx.resolveHost = async (name) => NAMES[name] ?? [];
}

const REFUSED = [
  'http://hooks.example.com/hooks', // plain http outside the development allowlist
  'ftp://hooks.example.com/hooks',
  'https://user:secret@hooks.example.com/hooks',
  'https://hooks.example.com@10.0.0.1/hooks',
  'https://10.0.0.1/hooks',
  'https://internal.example.com/hooks',
  'https://mixed.example.com/hooks',
  'https://rebind.example.com/hooks',
  'https://169.254.169.254/latest/meta-data',
  'https://metadata.google.internal/computeMetadata/v1',
  'https://[fd00:ec2::254]/',
  'https://[::1]/hooks',
  'https://[::ffff:10.0.0.1]/hooks',
  'https://100.64.0.1/hooks',
  'https://0.0.0.0/hooks',
  'https://[::]/hooks',
  'https://224.0.0.1/hooks',
  'https://does-not-resolve.example.com/hooks',
  'not a url',
];

describe('URL guard at creation and update', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    useTestResolver(w);
    receiver = await startReceiver();
    company = await createCompany(w);
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  it.each(REFUSED)('refuses %s with 422 and creates nothing', async (url) => {
    const response = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url, event_types: ['shipment.created'] },
    });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('webhook_endpoint.url_not_allowed');
    const list = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    expect(list.body.data).toHaveLength(0);
  });

  it('accepts a public https URL and the allowlisted local receiver', async () => {
    const publicOne = await createEndpoint(w, company.liveToken, { url: 'https://hooks.example.com/in' });
    expect(publicOne.url).toBe('https://hooks.example.com/in');
    const local = await createEndpoint(w, company.liveToken, { url: receiver.url });
    expect(local.url).toBe(receiver.url);
    for (const id of [publicOne.id, local.id]) {
      await call(w, 'DELETE', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    }
  });

  it('refuses a refused URL at update and keeps the old one', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, { url: 'https://hooks.example.com/in' });
    for (const url of ['https://169.254.169.254/', 'https://[::1]/', 'http://hooks.example.com/in']) {
      const response = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
        token: company.liveToken,
        body: { url, description: 'changed' },
      });
      expect(response.status).toBe(422);
      expect(response.body.code).toBe('webhook_endpoint.url_not_allowed');
    }
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}`, { token: company.liveToken });
    expect(read.body).toMatchObject({ url: 'https://hooks.example.com/in', description: null });
    const moved = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      token: company.liveToken,
      body: { url: receiver.url },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.url).toBe(receiver.url);
  });
});

describe('URL guard without the development allowlist', () => {
  let w: TestWaybill;
  let receiver: Receiver;

  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_WEBHOOK_ALLOW_PRIVATE: '' } });
    useTestResolver(w);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  it('refuses loopback receivers, plain http or not', async () => {
    const company = await createCompany(w);
    const https127 = receiver.url.replace('http://', 'https://');
    for (const url of [receiver.url, https127, 'https://localhost/hooks', 'https://127.0.0.1/hooks']) {
      const response = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { url, event_types: ['shipment.created'] },
      });
      expect(response.status, url).toBe(422);
      expect(response.body.code).toBe('webhook_endpoint.url_not_allowed');
    }
  });
});

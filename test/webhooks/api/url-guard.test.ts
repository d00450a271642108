import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_BODY, registerApp } from '../../apps/fixtures.ts';
import { type CompanyFixture, call, createCompany, signUpPerson } from '../../support/api.ts';
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
  // IPv6 forms that carry or reach a special IPv4 address, and other special IPv6 blocks.
  'https://[::169.254.169.254]/latest/meta-data', // IPv4-compatible
  'https://[::8.8.8.8]/hooks', // IPv4-compatible, deprecated whatever is inside
  'https://[::ffff:169.254.169.254]/hooks', // mapped
  'https://[::ffff:0:a9fe:a9fe]/hooks', // SIIT
  'https://[64:ff9b::a9fe:a9fe]/hooks', // NAT64
  'https://[64:ff9b:1::808:808]/hooks', // NAT64 local use
  'https://[2002:a9fe:a9fe::1]/hooks', // 6to4
  'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hooks', // Teredo
  'https://[2001:20::1]/hooks', // ORCHIDv2
  'https://[2001:2::1]/hooks', // benchmarking
  'https://[3fff::1]/hooks', // documentation
  'https://[ff0e::1]/hooks', // multicast
  'https://198.18.0.1/hooks', // benchmarking
  'https://192.0.2.1/hooks', // documentation
  // Loopback in IPv6 clothing is not the allowlisted 127.0.0.0/8.
  'http://[::ffff:127.0.0.1]:4000/hooks',
  'http://[::127.0.0.1]:4000/hooks',
  'http://[::ffff:0:7f00:1]:4000/hooks',
  'http://[64:ff9b::7f00:1]:4000/hooks',
  'http://[2002:7f00:1::]:4000/hooks',
  // Ports: https on 443 only, outside the allowlist.
  'https://hooks.example.com:8443/hooks',
  'https://hooks.example.com:22/hooks',
  'https://93.184.215.14:6379/',
  'https://[2606:2800:220:1::1]:8080/hooks',
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
    const explicit443 = await createEndpoint(w, company.liveToken, {
      url: 'https://hooks.example.com:443/in',
    });
    await call(w, 'DELETE', `/v1/webhook-endpoints/${explicit443.id}`, { token: company.liveToken });
    const local = await createEndpoint(w, company.liveToken, { url: receiver.url });
    expect(local.url).toBe(receiver.url);
    for (const id of [publicOne.id, local.id]) {
      await call(w, 'DELETE', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    }
  });

  it('refuses a refused URL at update and keeps the old one', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, { url: 'https://hooks.example.com/in' });
    for (const url of [
      'https://169.254.169.254/',
      'https://[::1]/',
      'http://hooks.example.com/in',
      'https://hooks.example.com:8443/in',
      'https://[::a9fe:a9fe]/',
    ]) {
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

describe('the events URL of an app follows the same guard', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
    useTestResolver(w);
  });
  afterAll(async () => {
    await w?.close();
  });

  it('refuses special addresses, IPv6 forms of the allowlist, and ports other than 443', async () => {
    const developer = await signUpPerson(w, 'Events Developer');
    for (const url of [
      'https://[::169.254.169.254]/events',
      'https://[::ffff:169.254.169.254]/events',
      'https://10.0.0.1/events',
      'https://[64:ff9b:1::a9fe:a9fe]/events',
      'http://[::ffff:127.0.0.1]:4000/events',
      'http://[64:ff9b::7f00:1]:4000/events',
      'https://events.example.com:8443/events',
      'https://93.184.215.14:22/',
    ]) {
      const created = await call(w, 'POST', '/v1/developer/apps', {
        token: developer.token,
        body: { ...APP_BODY, events_url: url },
      });
      // An address the guard refuses is 422 app.events_url_not_allowed; a port outside the policy
      // is a malformed events URL, 400.
      const port = /:(8443|22)\//.test(url);
      expect(created.status, url).toBe(port ? 400 : 422);
      expect(created.body.code, url).toBe(port ? 'validation.failed' : 'app.events_url_not_allowed');
      expect(created.body.errors, url).toEqual([{ path: '/events_url', message: expect.any(String) }]);
    }
    const app = await registerApp(w, developer, { events_url: 'https://events.example.com/events' });
    const moved = await call(w, 'PUT', `/v1/developer/apps/${app.id}/events`, {
      token: developer.token,
      body: { url: 'https://events.example.com:8443/events' },
    });
    expect(moved.status).toBe(400);
    for (const url of ['https://events.example.com:443/events', 'http://127.0.0.1:4000/events']) {
      const allowed = await call(w, 'PUT', `/v1/developer/apps/${app.id}/events`, {
        token: developer.token,
        body: { url },
      });
      expect(allowed.status, url).toBe(200);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../../src/context.ts';
import { attemptDelivery } from '../../src/delivery/attempt.ts';
import {
  assertUrlAllowed,
  checkConnection,
  classifyAddress,
  GuardRefusal,
} from '../../src/delivery/guard.ts';
import { AppError } from '../../src/lib/errors.ts';
import { createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  attemptsOf,
  deliveriesOf,
  insertEndpoint,
  type Receiver,
  startReceiver,
  testWorker,
} from './support.ts';

const REFUSED = [
  '127.0.0.1',
  '127.255.0.9',
  '10.1.2.3',
  '172.16.0.1',
  '192.168.1.1',
  '169.254.169.254',
  '169.254.1.1',
  '100.64.0.1',
  '100.100.100.200',
  '0.0.0.0',
  '255.255.255.255',
  '224.0.0.1',
  '240.0.0.1',
  '192.0.0.192',
  '198.18.0.1',
  '::1',
  '::',
  'fe80::1',
  'fc00::1',
  'fd00:ec2::254',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:10.0.0.1',
  '::ffff:169.254.169.254',
  '64:ff9b::a9fe:a9fe',
  '64:ff9b::7f00:1',
  '2002:7f00:1::',
  '2002:a9fe:a9fe::1',
  '2001::1',
  '2001:db8::1',
  // The rest of the IANA IPv4 special-purpose registry (RFC 6890 and updates).
  '0.1.2.3',
  '192.0.0.9', // PCP anycast
  '192.0.0.170', // NAT64 discovery
  '192.0.2.1',
  '192.31.196.1',
  '192.52.193.1',
  '192.88.99.1',
  '192.175.48.1',
  '198.19.255.254',
  '198.51.100.7',
  '203.0.113.9',
  '239.255.255.250',
  // IPv4-compatible ::/96 (deprecated): refused whatever the IPv4 inside, public or not.
  '::169.254.169.254',
  '::a9fe:a9fe',
  '::8.8.8.8',
  '::0.0.0.2',
  // SIIT's IPv4-translated ::ffff:0:0:0/96.
  '::ffff:0:a9fe:a9fe',
  '::ffff:0:808:808',
  // NAT64: the well-known prefix with a special IPv4 inside, and the whole local-use /48 (RFC 8215).
  '64:ff9b::10.0.0.1',
  '64:ff9b::c0a8:101',
  '64:ff9b:1::808:808',
  '64:ff9b:1:a9fe:a9fe::',
  '64:ff9b:1:ffff:ffff:ffff:ffff:ffff',
  // 6to4 with a special IPv4 inside.
  '2002:c0a8:101::1',
  '2002:a00:1::',
  '2002:6440:1::', // 100.64.0.1
  // Teredo, benchmarking, ORCHID, ORCHIDv2, AMT, DETs, AS112, documentation.
  '2001:0:4136:e378:8000:63bf:3fff:fdd2',
  '2001:2::1',
  '2001:3::1',
  '2001:10::1',
  '2001:20::1',
  '2001:30::1',
  '2001:4:112::1',
  '2620:4f:8000::1',
  '3fff::1',
  // Outside global unicast 2000::/3: discard-only, SRv6, site-local, unassigned, multicast.
  '100::1',
  '100:0:0:1::1',
  '5f00::1',
  'fec0::1',
  '4000::1',
  'ff0e::1',
  '::2',
  'not an address',
  'fe80::1%eth0',
];
const PUBLIC = [
  '93.184.216.34',
  '8.8.8.8',
  '1.1.1.1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001:81b::200e',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '64:ff9b::8.8.4.4',
  '2002:808:808::1', // 6to4 of 8.8.8.8
];

async function refusal(ctx: AppContext, url: string): Promise<string | null> {
  try {
    await assertUrlAllowed(ctx, url);
    return null;
  } catch (error) {
    if (error instanceof AppError) return error.code;
    throw error;
  }
}

describe('the URL guard', () => {
  let w: TestWaybill;
  let answers: Record<string, string[]>;
  beforeAll(async () => {
    // No development allowlist here: loopback is refused like any other private address.
    w = await startWaybill({ env: { WAYBILL_WEBHOOK_ALLOW_PRIVATE: '' } });
    answers = {};
    w.ctx.resolveHost = async (name) => answers[name] ?? [];
  });
  afterAll(async () => {
    await w?.close();
  });

  it.each(REFUSED)('refuses an https name resolving to %s', async (address) => {
    answers['hooks.example.com'] = ['93.184.216.34', address];
    expect(classifyAddress(address, [])).toBe('refused');
    expect(await refusal(w.ctx, 'https://hooks.example.com/in')).toBe('webhook_endpoint.url_not_allowed');
  });

  it.each(PUBLIC)('lets through a name resolving to %s', async (address) => {
    answers['hooks.example.com'] = [address];
    expect(classifyAddress(address, [])).toBe('public');
    expect(await refusal(w.ctx, 'https://hooks.example.com/in')).toBeNull();
  });

  it.each(REFUSED.filter((address) => address.includes(':') && !address.includes('%')))(
    'refuses https://[%s]/ written in the URL',
    async (address) => {
      const host = new URL(`https://[${address}]/`).host;
      expect(await refusal(w.ctx, `https://${host}/in`)).toBe('webhook_endpoint.url_not_allowed');
    },
  );

  it('allows https on port 443 only: any other port of a public host is refused', async () => {
    answers['hooks.example.com'] = ['93.184.216.34'];
    expect(await refusal(w.ctx, 'https://hooks.example.com:443/in')).toBeNull();
    for (const url of [
      'https://hooks.example.com:8443/in',
      'https://hooks.example.com:22/in',
      'https://hooks.example.com:6379/in',
      'https://hooks.example.com:1/in',
      'https://93.184.216.34:25/',
      'https://[2606:4700:4700::1111]:8080/',
      'http://hooks.example.com:443/in',
      'http://hooks.example.com:80/in',
    ]) {
      expect(await refusal(w.ctx, url), url).toBe('webhook_endpoint.url_not_allowed');
    }
  });

  it('checks a connection by its scheme and port too, not only by its address', async () => {
    answers['hooks.example.com'] = ['93.184.216.34'];
    const to = (protocol: string, port: string | number | null) =>
      checkConnection(w.ctx, { hostname: 'hooks.example.com', protocol, port });
    expect(await to('https:', 443)).toEqual(['93.184.216.34']);
    expect(await to('https:', '')).toEqual(['93.184.216.34']);
    expect(await to('https:', null)).toEqual(['93.184.216.34']);
    for (const [protocol, port] of [
      ['https:', 8443],
      ['https:', '22'],
      ['http:', 80],
      ['http:', 443],
    ] as const) {
      await expect(to(protocol, port), `${protocol}${port}`).rejects.toBeInstanceOf(GuardRefusal);
    }
  });

  it.each([
    'http://hooks.example.com/in',
    'https://user:pass@hooks.example.com/in',
    'https://nowhere.example.com/in',
    'https://metadata.google.internal/computeMetadata/v1/',
    'https://metadata.goog/',
    'https://[::1]/in',
    'https://[::ffff:7f00:1]/in',
    'https://169.254.169.254/latest/meta-data/',
    'https://2130706433/in',
    'https://0x7f.1/in',
    'ftp://hooks.example.com/in',
    'not a url',
  ])('refuses %s', async (url) => {
    answers['hooks.example.com'] = ['93.184.216.34'];
    expect(await refusal(w.ctx, url)).toBe('webhook_endpoint.url_not_allowed');
  });
});

describe('the development allowlist', () => {
  const LOOPBACK = ['127.0.0.0/8'];
  it('is compared with the address dialled, never with an IPv4 address inside an IPv6 one', () => {
    expect(classifyAddress('127.0.0.1', LOOPBACK)).toBe('allowlisted');
    for (const address of [
      '::ffff:127.0.0.1', // mapped
      '::ffff:7f00:1',
      '::127.0.0.1', // IPv4-compatible
      '::ffff:0:7f00:1', // SIIT
      '64:ff9b::7f00:1', // NAT64 well-known prefix
      '64:ff9b:1::7f00:1', // NAT64 local use
      '64:ff9b:1:7f00:1::', // NAT64 local use, the IPv4 after a /48 prefix
      '2002:7f00:1::1', // 6to4
    ]) {
      expect(classifyAddress(address, LOOPBACK), address).toBe('refused');
    }
    // Named as it is dialled, an IPv6 form is let through.
    expect(classifyAddress('::ffff:127.0.0.1', ['::ffff:127.0.0.1/128'])).toBe('allowlisted');
    expect(classifyAddress('::1', ['::1/128'])).toBe('allowlisted');
    expect(classifyAddress('127.0.0.1', ['::ffff:127.0.0.1/128'])).toBe('refused');
  });
});

describe('the guard at every connection', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let answer: string[];
  beforeAll(async () => {
    w = await startWaybill();
    // Each message on a new connection, so that every connection is checked again.
    receiver = await startReceiver((_m, res) => {
      res.setHeader('connection', 'close');
      res.end('ok');
    });
    answer = ['127.0.0.1'];
    w.ctx.resolveHost = async () => answer;
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  it('lets plain http and any port through only inside the development allowlist', async () => {
    answer = ['127.0.0.1'];
    expect(await refusal(w.ctx, 'http://local.test:8080/in')).toBeNull();
    expect(await refusal(w.ctx, 'http://127.0.0.1:8080/in')).toBeNull();
    expect(await refusal(w.ctx, 'https://127.0.0.1:8443/in')).toBeNull();
    expect(await refusal(w.ctx, 'http://[::ffff:127.0.0.1]:8080/in')).toBe(
      'webhook_endpoint.url_not_allowed',
    );
    expect(await refusal(w.ctx, 'http://[64:ff9b::7f00:1]:8080/in')).toBe('webhook_endpoint.url_not_allowed');
    answer = ['::ffff:127.0.0.1'];
    expect(await refusal(w.ctx, 'http://mapped.test:8080/in')).toBe('webhook_endpoint.url_not_allowed');
    answer = ['127.0.0.1'];
    answer = ['127.0.0.1', '93.184.216.34'];
    expect(await refusal(w.ctx, 'http://mixed.test/in')).toBe('webhook_endpoint.url_not_allowed');
  });

  it('refuses at connect a public host on a port outside the policy, for a row written past the API', async () => {
    answer = ['93.184.216.34'];
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, {
      tenantId: company.tenantId,
      url: 'https://hooks.public.test:8443/in',
    });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const [delivery] = await deliveriesOf(w, endpoint.id);
    const [attempt] = await attemptsOf(w, delivery?.id as string);
    expect(attempt?.error).toBe('address_not_allowed');
    answer = [];
  });

  it('refuses a name that resolves to a refused address after creation, without connecting', async () => {
    answer = ['127.0.0.1'];
    const company = await createCompany(w);
    const port = new URL(receiver.url).port;
    const url = `http://hooks.rebind.test:${port}/hook`;
    await assertUrlAllowed(w.ctx, url);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    await worker.tick();
    expect(receiver.received).toHaveLength(1);

    answer = ['169.254.169.254'];
    w.clock.advance(1000);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    expect(receiver.received).toHaveLength(1);
    const second = (await deliveriesOf(w, endpoint.id))[1];
    if (!second) throw new Error('no second delivery');
    expect(second.status).toBe('pending');
    const [attempt] = await attemptsOf(w, second.id);
    expect(attempt?.error).toBe('address_not_allowed');
    expect(attempt?.status_code).toBeNull();

    // Replays and test sends go through the same guard.
    const replay = await attemptDelivery(w.ctx, second.id, 'replay', company.tenantId);
    expect(replay.error).toBe('address_not_allowed');
    answer = [];
    expect((await attemptDelivery(w.ctx, second.id, 'replay', company.tenantId)).error).toBe('dns_failed');
    expect(receiver.received).toHaveLength(1);
  });
});

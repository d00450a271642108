import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../../../src/context.ts';
import { AppError } from '../../../src/lib/errors.ts';
import { attemptDelivery } from '../../../src/modules/webhooks/attempt.ts';
import { assertUrlAllowed, classifyAddress } from '../../../src/modules/webhooks/guard.ts';
import { createCompany, createShipment } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
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
];
const PUBLIC = [
  '93.184.216.34',
  '8.8.8.8',
  '1.1.1.1',
  '2606:4700:4700::1111',
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
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
    expect(await refusal(w.ctx, 'https://hooks.example.com/in')).toBeNull();
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

  it('lets plain http through only inside the development allowlist', async () => {
    answer = ['127.0.0.1'];
    expect(await refusal(w.ctx, 'http://local.test:8080/in')).toBeNull();
    expect(await refusal(w.ctx, 'http://127.0.0.1:8080/in')).toBeNull();
    answer = ['127.0.0.1', '93.184.216.34'];
    expect(await refusal(w.ctx, 'http://mixed.test/in')).toBe('webhook_endpoint.url_not_allowed');
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
    const replay = await attemptDelivery(w.ctx, second.id, 'replay');
    expect(replay.error).toBe('address_not_allowed');
    answer = [];
    expect((await attemptDelivery(w.ctx, second.id, 'replay')).error).toBe('dns_failed');
    expect(receiver.received).toHaveLength(1);
  });
});

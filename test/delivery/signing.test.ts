import { describe, expect, it } from 'vitest';
import { signatureHeader } from '../../src/delivery/signing.ts';
import { HOUR } from '../../src/lib/clock.ts';
import { newSigningSecret } from '../../src/lib/crypto.ts';
import { createCompany, createShipment } from '../support/api.ts';
import { insertEndpoint, testWorker, useWaybillAndReceiver, verify } from './support.ts';

// ../shared/spec/standard-webhooks-test-vectors.md
const VECTORS = [
  {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  },
  {
    secret: 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD',
    id: 'msg_27UH4WbU6Z5A5EzD8u03UvzRbpk',
    timestamp: 1649367553,
    body: '{"email":"test@example.com","username":"test_user"}',
    signature: 'v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=',
  },
];

describe('signing', () => {
  it.each(VECTORS)('reproduces the published vector $id', (v) => {
    const header = signatureHeader([v.secret], v.id, v.timestamp, v.body);
    expect(header).toBe(v.signature);
    const headers = {
      'webhook-id': v.id,
      'webhook-timestamp': String(v.timestamp),
      'webhook-signature': header,
    };
    expect(() => verify({ headers, body: v.body }, v.secret, new Date(v.timestamp * 1000))).not.toThrow();
  });

  it('puts one v1 signature per secret, space-separated', () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    const header = signatureHeader([a, b], 'evt_1', 1700000000, '{}');
    expect(header.split(' ')).toHaveLength(2);
    expect(header.split(' ').every((s) => s.startsWith('v1,'))).toBe(true);
  });
});

describe('secret rotation', () => {
  const env = useWaybillAndReceiver();

  it('signs with both secrets for 24 h, then with the new one only', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const { id, secret: oldSecret } = await insertEndpoint(w, {
      tenantId: company.tenantId,
      url: receiver.url,
    });
    const newSecret = newSigningSecret();
    // What a rotation leaves behind: the new secret, the old one until 24 h from now.
    await w.ctx.db
      .updateTable('webhook_endpoints')
      .set({
        secret_sealed: w.ctx.secrets.seal(newSecret),
        previous_secret_sealed: w.ctx.secrets.seal(oldSecret),
        previous_secret_expires_at: new Date(w.clock.now().getTime() + 24 * HOUR),
      })
      .where('id', '=', id)
      .execute();
    const worker = testWorker(w);

    await createShipment(w, company.liveToken);
    await worker.tick();
    const during = receiver.received.at(-1);
    if (!during) throw new Error('nothing received');
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(during, oldSecret, w.clock.now())).toBeTruthy();
    expect(verify(during, newSecret, w.clock.now())).toBeTruthy();

    w.clock.advance(24 * HOUR);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const after = receiver.received.at(-1);
    if (!after || after === during) throw new Error('nothing received after 24 h');
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verify(after, newSecret, w.clock.now())).toBeTruthy();
    expect(() => verify(after, oldSecret, w.clock.now())).toThrow();
  });
});

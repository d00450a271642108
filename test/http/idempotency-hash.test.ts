import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/lib/canonical-json.ts';
import { call, createCompany } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

const PASSWORD = 'correct horse battery';

/** A JSON body written by hand, so that the test controls the key order on the wire. */
const postRaw = (path: string, rawBody: string, key: string, token?: string) =>
  call(w, 'POST', path, {
    rawBody,
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    ...(token ? { token } : {}),
  });

async function storedKeys(key: string) {
  return w.ctx.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).execute();
}

describe('the idempotency request hash', () => {
  it('takes the same body with its keys in another order as the same request', async () => {
    const { liveToken } = await createCompany(w);
    const first = await postRaw(
      '/v1/shipments',
      '{"recipient_name":"Ada","currency":"EUR","parcels":[{"weight_grams":500,"reference":"A"},{"weight_grams":7}]}',
      'reordered',
      liveToken,
    );
    expect(first.status).toBe(201);
    const again = await postRaw(
      '/v1/shipments',
      '{"parcels":[{"reference":"A","weight_grams":500},{"weight_grams":7}],"currency":"EUR","recipient_name":"Ada"}',
      'reordered',
      liveToken,
    );
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    // Array order is part of the request: swapped parcels are another request.
    const swapped = await postRaw(
      '/v1/shipments',
      '{"recipient_name":"Ada","currency":"EUR","parcels":[{"weight_grams":7},{"weight_grams":500,"reference":"A"}]}',
      'reordered',
      liveToken,
    );
    expect(swapped.status).toBe(409);
    expect(swapped.body.code).toBe('idempotency.key_reused');
  });

  it('stores a keyed hash: not the plain SHA-256 of the request, and different under another secret key', async () => {
    const body = { recipient_name: 'Keyed', currency: 'EUR' };
    const { liveToken } = await createCompany(w);
    expect(
      (
        await call(w, 'POST', '/v1/shipments', {
          token: liveToken,
          body,
          headers: { 'idempotency-key': 'keyed' },
        })
      ).status,
    ).toBe(201);
    const [row] = await storedKeys('keyed');
    const text = JSON.stringify(body);
    const guesses = [
      `POST /v1/shipments\n${text}`,
      `POST /v1/shipments\n${canonicalJson(body)}`,
      text,
    ].flatMap((input) =>
      ['base64url', 'hex', 'base64'].map((encoding) =>
        createHash('sha256')
          .update(input)
          .digest(encoding as 'hex'),
      ),
    );
    expect(row?.request_hash).toBeTruthy();
    expect(guesses).not.toContain(row?.request_hash);

    // The same request under another secret key hashes to something else.
    const other = await startWaybill({
      env: { WAYBILL_SECRET_KEY: 'ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100' },
    });
    try {
      const { liveToken: otherToken } = await createCompany(other, 'Other Key');
      await call(other, 'POST', '/v1/shipments', {
        token: otherToken,
        body,
        headers: { 'idempotency-key': 'keyed' },
      });
      const [otherRow] = await other.ctx.db
        .selectFrom('idempotency_keys')
        .select('request_hash')
        .where('key', '=', 'keyed')
        .execute();
      expect(otherRow?.request_hash).toBeTruthy();
      expect(otherRow?.request_hash).not.toBe(row?.request_hash);
    } finally {
      await other.close();
    }
  });
});

describe('credentials routes ignore Idempotency-Key', () => {
  it('sign-up and sign-in run every time and store nothing about the request', async () => {
    const email = `keyed-${crypto.randomUUID()}@example.test`;
    const signup = { email, password: PASSWORD, name: 'Keyed Person' };
    const first = await call(w, 'POST', '/v1/auth/signup', {
      body: signup,
      headers: { 'idempotency-key': 'signup-1' },
    });
    expect(first.status).toBe(201);
    // Run again rather than replayed: the e-mail is taken now.
    const second = await call(w, 'POST', '/v1/auth/signup', {
      body: signup,
      headers: { 'idempotency-key': 'signup-1' },
    });
    expect(second.status).toBe(409);
    expect(second.headers['idempotent-replayed']).toBeUndefined();

    const signIn = (password: string) =>
      call(w, 'POST', '/v1/auth/sessions', {
        body: { email, password },
        headers: { 'idempotency-key': 'signin-1' },
      });
    const a = await signIn(PASSWORD);
    const b = await signIn(PASSWORD);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.body.token).not.toBe(a.body.token);
    // Another body under the same key is not a reused key either: a wrong password is a wrong password.
    const wrong = await signIn('not the password at all');
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).not.toBe('idempotency.key_reused');

    expect(await storedKeys('signup-1')).toEqual([]);
    expect(await storedKeys('signin-1')).toEqual([]);
  });

  it('other person calls keep their keys', async () => {
    const { owner } = await createCompany(w);
    const first = await call(w, 'POST', '/v1/companies', {
      token: owner.token,
      body: { name: 'Kept Ltd' },
      headers: { 'idempotency-key': 'kept' },
    });
    const again = await call(w, 'POST', '/v1/companies', {
      token: owner.token,
      body: { name: 'Kept Ltd' },
      headers: { 'idempotency-key': 'kept' },
    });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
  });
});

describe('a deeply nested body', () => {
  it('is hashed without exhausting the stack, wherever it is posted', async () => {
    const { liveToken } = await createCompany(w);
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const path of ['/v1/no-such-path', '/v1/auth/sessions/current', '/v1/shipments']) {
      const answer = await postRaw(path, `{"a":${deep}}`, `deep-${path}`, liveToken);
      expect(answer.status, path).toBeLessThan(500);
    }
  });

  it('canonical JSON is iterative: two hundred thousand levels do not overflow', () => {
    let nested: unknown = 'x';
    for (let i = 0; i < 200_000; i += 1) nested = i % 2 ? [nested] : { k: nested };
    const text = canonicalJson(nested);
    expect(text.length).toBeGreaterThan(600_000);
    expect(text.endsWith('}]}]')).toBe(true);
  });

  it('canonical JSON sorts keys at every level and agrees with JSON where order does not matter', () => {
    const value = { b: [3, { z: 1, a: null }], a: 'é', c: { y: true, x: 1.5, w: undefined } };
    expect(canonicalJson(value)).toBe('{"a":"é","b":[3,{"a":null,"z":1}],"c":{"x":1.5,"y":true}}');
    expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
    expect(canonicalJson([undefined, 'a\u0000\ud800'])).toBe(JSON.stringify([null, 'a\u0000\ud800']));
    expect(canonicalJson(null)).toBe('null');
  });
});

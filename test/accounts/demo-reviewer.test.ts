import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { DEMO_PASSWORD, DEMO_PEOPLE, seedDemo } from '../../src/seed.ts';
import { call, signUpPerson } from '../support/api.ts';
import { startWaybill, TEST_SECRET_KEY, type TestWaybill } from '../support/harness.ts';

describe('WAYBILL_DEMO defaults', () => {
  const config = (env: Record<string, string>) => loadConfig({ WAYBILL_SECRET_KEY: TEST_SECRET_KEY, ...env });

  it('is on for the embedded engine and off for PostgreSQL unless set', () => {
    expect(config({ WAYBILL_DATABASE_URL: 'memory:' }).demo).toBe(true);
    expect(config({ WAYBILL_DATABASE_URL: 'memory:', WAYBILL_DEMO: '0' }).demo).toBe(false);
    expect(config({ WAYBILL_DATABASE_URL: 'postgres://db.example/waybill' }).demo).toBe(false);
    expect(config({ WAYBILL_DATABASE_URL: 'postgresql://db.example/waybill' }).demo).toBe(false);
    expect(config({ WAYBILL_DATABASE_URL: 'postgres://db.example/waybill', WAYBILL_DEMO: '1' }).demo).toBe(
      true,
    );
  });

  it('names no reviewer by e-mail: the demo reviewer is marked by the seed instead', () => {
    const embedded = config({ WAYBILL_DATABASE_URL: 'memory:' });
    expect([...embedded.reviewerEmails]).toEqual([]);
    expect(embedded.demoReviewer).toBe(true);
    expect(config({ WAYBILL_DATABASE_URL: 'postgres://db.example/waybill' }).demoReviewer).toBe(false);
    expect(
      config({ WAYBILL_DATABASE_URL: 'memory:', WAYBILL_REVIEWER_EMAILS: 'a@example.test' }).demoReviewer,
    ).toBe(false);
  });
});

/** A Waybill with the demo on (or off) and no reviewers named, as `npm start` runs. */
function demoWaybill(demo: '0' | '1') {
  // undefined: WAYBILL_REVIEWER_EMAILS unset, as the harness otherwise names a test reviewer.
  return startWaybill({
    env: { WAYBILL_DEMO: demo, WAYBILL_REVIEWER_EMAILS: undefined as unknown as string },
  });
}

async function isReviewer(instance: TestWaybill, email: string, password: string): Promise<boolean> {
  const session = await call(instance, 'POST', '/v1/auth/sessions', { body: { email, password } });
  expect(session.status).toBe(201);
  const me = await call(instance, 'GET', '/v1/me', { token: session.body.token });
  expect(session.body.user.is_reviewer).toBe(me.body.is_reviewer);
  return me.body.is_reviewer;
}

describe('the demo reviewer the demo seeded', () => {
  let w: TestWaybill;
  let off: TestWaybill;
  beforeAll(async () => {
    w = await demoWaybill('1');
    expect(await seedDemo(w.ctx)).not.toBeNull();
    off = await demoWaybill('0');
    expect(await seedDemo(off.ctx)).not.toBeNull();
  });
  afterAll(async () => {
    await w?.close();
    await off?.close();
  });

  it('is a reviewer while the demo is on', async () => {
    expect(await isReviewer(w, DEMO_PEOPLE.reviewer.email, DEMO_PASSWORD)).toBe(true);
    expect(await isReviewer(w, DEMO_PEOPLE.owner.email, DEMO_PASSWORD)).toBe(false);
  });

  it('is not a reviewer when the demo is turned off', async () => {
    expect(await isReviewer(off, DEMO_PEOPLE.reviewer.email, DEMO_PASSWORD)).toBe(false);
  });
});

describe('an account with the demo reviewer’s e-mail that the demo did not seed', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await demoWaybill('1');
    await signUpPerson(w, 'First');
    // The demo seeds only an empty database: here it does nothing.
    expect(await seedDemo(w.ctx)).toBeNull();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('is not a reviewer, though the demo is on', async () => {
    const impostor = await call(w, 'POST', '/v1/auth/signup', {
      body: { email: DEMO_PEOPLE.reviewer.email, password: 'my own password', name: 'Impostor' },
    });
    expect(impostor.status).toBe(201);
    expect(impostor.body.is_reviewer).toBe(false);
    expect(await isReviewer(w, DEMO_PEOPLE.reviewer.email, 'my own password')).toBe(false);
  });
});

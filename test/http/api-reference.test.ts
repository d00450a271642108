import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_REFERENCE_PREFIX,
  API_REFERENCE_URLS,
  loadApiReferenceHandlers,
} from '../../src/http/api-reference.ts';
import { call } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

/** The reference's own policy: its page runs Scalar's inline script bundle. */
const REFERENCE_SCRIPTS = "script-src 'self' 'unsafe-inline' 'unsafe-eval'";

describe('the API reference at /docs, Scalar imported by its first request (decision 0075)', () => {
  it('registers every URL Scalar adds, and no other', async () => {
    const handlers = await loadApiReferenceHandlers(w.app, {
      routePrefix: API_REFERENCE_PREFIX,
      configuration: { title: 'Waybill API reference' },
    });
    expect([...handlers.keys()].sort()).toEqual([...API_REFERENCE_URLS].sort());
  });

  it('answers the page, its script and the document with the reference policy', async () => {
    const bare = await call(w, 'GET', '/docs');
    expect(bare.status).toBe(301);
    expect(bare.headers.location).toBe('/docs/');

    const page = await call(w, 'GET', '/docs/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Waybill API reference');
    expect(page.text).toContain('js/scalar.js');

    const script = await call(w, 'GET', '/docs/js/scalar.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/^application\/javascript/);
    expect(script.text.length).toBeGreaterThan(1_000_000);

    const json = await call(w, 'GET', '/docs/openapi.json');
    expect(json.status).toBe(200);
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    const document = (await call(w, 'GET', '/openapi.json')).body;
    expect(Object.keys(json.body.paths as object).sort()).toEqual(Object.keys(document.paths).sort());

    const yaml = await call(w, 'GET', '/docs/openapi.yaml');
    expect(yaml.status).toBe(200);
    expect(yaml.headers['content-type']).toMatch(/^application\/yaml/);
    expect(yaml.text).toMatch(/^openapi: 3\.1\.0$/m);

    for (const answer of [bare, page, script, json, yaml]) {
      expect(String(answer.headers['content-security-policy'])).toContain(REFERENCE_SCRIPTS);
      expect(answer.headers['x-frame-options']).toBe('DENY');
    }
  });
});

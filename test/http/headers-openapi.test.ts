import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DELAY_MS } from '../../src/modules/accounts/sign-in-throttle.ts';
import { call, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

function expectSecurityHeaders(headers: Record<string, unknown>, where: string) {
  expect(String(headers['content-security-policy']), where).toMatch(/frame-ancestors 'none'/);
  expect(headers['x-frame-options'], where).toBe('DENY');
  expect(headers['x-content-type-options'], where).toBe('nosniff');
}

describe('security headers', () => {
  it('are on API answers, errors, pages and the reference', async () => {
    const signup = await call(w, 'POST', '/v1/auth/signup', {
      body: { email: 'headers@example.test', password: 'correct horse battery', name: 'H' },
    });
    expectSecurityHeaders(signup.headers, 'signup');
    expectSecurityHeaders((await call(w, 'GET', '/v1/me')).headers, '401');
    expectSecurityHeaders(
      (await call(w, 'POST', '/v1/companies', { rawBody: 'x', headers: { 'content-type': 'text/plain' } }))
        .headers,
      '415',
    );
    expectSecurityHeaders((await call(w, 'GET', '/v1/nowhere')).headers, '404');
    expectSecurityHeaders((await call(w, 'GET', '/signin')).headers, 'signin page');
    expectSecurityHeaders((await call(w, 'GET', '/openapi.json')).headers, 'openapi');
    expectSecurityHeaders((await call(w, 'GET', '/docs/')).headers, 'docs');
  });
});

describe('the /signin form', () => {
  it('answers the 11th attempt within a minute with 429', async () => {
    // The form's CSRF token and its cookie, as a browser would hold them.
    const page = await w.app.inject({ method: 'GET', url: '/signin', remoteAddress: '10.9.9.9' });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const cookie = String(page.headers['set-cookie'] ?? '')
      .split(/,(?=\s*\w+=)/)
      .map((c) => c.split(';')[0])
      .join('; ');
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      // Past the account's own growing delay (sign-in-throttle.ts): this is the per-address limit.
      w.clock.advance(MAX_DELAY_MS);
      const attempt = await w.app.inject({
        method: 'POST',
        url: '/signin',
        remoteAddress: '10.9.9.9',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
        payload: new URLSearchParams({
          _csrf: csrf,
          email: 'nobody@example.test',
          password: `guess-${i}`,
        }).toString(),
      });
      statuses.push(attempt.statusCode);
    }
    expect(statuses.slice(0, 10), String(statuses)).toEqual(Array(10).fill(401));
    expect(statuses[10]).toBe(429);
  });
});

describe('OpenAPI', () => {
  let doc: Json;
  beforeAll(async () => {
    const response = await call(w, 'GET', '/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    doc = response.body;
  });

  it('is an OpenAPI 3.1 document listing the routes with their schemas', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.components.securitySchemes.session).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.token).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const [path, methods] of [
      ['/v1/auth/signup', ['post']],
      ['/v1/auth/sessions', ['post']],
      ['/v1/auth/sessions/current', ['delete']],
      ['/v1/me', ['get']],
      ['/v1/companies', ['post']],
      ['/v1/companies/{tenant_id}/go-live', ['post']],
      ['/v1/companies/{tenant_id}/members', ['get', 'post']],
      ['/v1/companies/{tenant_id}/members/{user_id}', ['delete']],
      ['/v1/companies/{tenant_id}/customer-accounts', ['get', 'post']],
      ['/v1/companies/{tenant_id}/api-tokens', ['get', 'post']],
      ['/v1/companies/{tenant_id}/api-tokens/{tok_id}', ['delete']],
      ['/v1/shipments', ['get', 'post']],
      ['/v1/shipments/{id}', ['get']],
      ['/v1/shipments/{id}/status', ['post']],
    ] as const) {
      for (const method of methods) {
        const operation = doc.paths[path]?.[method];
        expect(operation, `${method} ${path}`).toBeDefined();
        expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
      }
    }
    const create = doc.paths['/v1/shipments'].post;
    const body = create.requestBody.content['application/json'].schema;
    expect(body.properties.currency).toMatchObject({ type: 'string', maxLength: 3 });
    expect(body.additionalProperties).toBe(false);
    expect(create.responses['201'].content['application/json'].schema).toBeDefined();
    expect(create.security).toEqual([{ token: ['shipments:write'] }]);
    expect(create.operationId).toBe('postShipments');
    expect(doc.paths['/v1/me'].get.security).toEqual([{ session: [] }]);
    expect(doc.paths['/v1/auth/signup'].post.security).toEqual([]);
    // Errors are problem details, and the document says so.
    expect(Object.keys(create.responses['400'].content)).toEqual(['application/problem+json']);
    expect(Object.keys(create.responses['201'].content)).toEqual(['application/json']);
    const list = doc.paths['/v1/shipments'].get;
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(
      ['cursor', 'customer_account_id', 'limit', 'status'].sort(),
    );
    // Pages and the HTML routes are not part of the API document.
    expect(doc.paths['/signin']).toBeUndefined();
    expect(doc.paths['/openapi.json']).toBeUndefined();
  });

  it('every $ref resolves, Problem among them, and every schema compiles', () => {
    const refs = new Set<string>();
    JSON.stringify(doc, (key, value) => {
      if (key === '$ref') refs.add(value);
      return value;
    });
    expect(refs).toContain('#/components/schemas/Problem');
    for (const ref of refs) {
      expect(ref, ref).toMatch(/^#\//);
      const target = ref
        .slice(2)
        .split('/')
        .reduce((node: Json, part: string) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
      expect(target, `${ref} resolves`).toBeDefined();
    }
    expect(doc.components.schemas.Problem.required).toEqual(
      expect.arrayContaining(['type', 'title', 'status', 'detail', 'code']),
    );
    const error = doc.paths['/v1/shipments'].post.responses['409'];
    expect(JSON.stringify(error)).toContain('#/components/schemas/Problem');

    // Compile each schema against the document's components, as a client generator would.
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const rewrite = (schema: Json) =>
      JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
    for (const [path, methods] of Object.entries<Json>(doc.paths)) {
      for (const [method, operation] of Object.entries<Json>(methods)) {
        const schemas = [
          operation.requestBody?.content?.['application/json']?.schema,
          ...Object.values<Json>(operation.responses ?? {}).flatMap((r) =>
            Object.values<Json>(r.content ?? {}).map((c) => c.schema),
          ),
          ...(operation.parameters ?? []).map((p: Json) => p.schema),
        ].filter(Boolean);
        for (const schema of schemas) {
          expect(() => ajv.compile(rewrite(schema)), `${method} ${path}`).not.toThrow();
        }
      }
    }
  });

  it('the reference page answers HTML', async () => {
    const docs = await call(w, 'GET', '/docs/');
    expect(docs.status).toBe(200);
    expect(docs.headers['content-type']).toMatch(/^text\/html/);
    expect(docs.text).toMatch(/<html/i);
  });
});

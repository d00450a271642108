import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/lib/paging.ts';
import { basic, registerApp, type TestApp } from '../oauth/support.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInInBrowser } from '../web/page-client.ts';
import { countRows, expectProblem } from './expect.ts';

let w: TestWaybill;
let company: CompanyFixture;
let oauthApp: TestApp;

beforeAll(async () => {
  w = await startWaybill();
  company = await createCompany(w);
  oauthApp = await registerApp(w);
});
afterAll(async () => {
  await w?.close();
});

const NUL = '\u0000';
const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** The answer of an RFC 6749 endpoint: its error format, never a 5xx. */
function expectOAuthError(response: { status: number; body: Json }, codes: string[]) {
  expect(response.status, JSON.stringify(response.body)).toBeLessThan(500);
  expect(codes).toContain(response.body?.error);
}

/** Bytes over a socket, for what fetch and inject refuse to send (bad Content-Length, raw bytes). */
function rawHttp(w: TestWaybill, text: string): Promise<string> {
  const { hostname, port } = new URL(w.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

function headersAndBody(answer: string) {
  const [head = '', ...rest] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

describe('a NUL or another control character is refused where text comes in', () => {
  it('JSON bodies: sign-in, sign-up, company, shipment and endpoint fields (no 500, nothing stored)', async () => {
    const before = await countRows(w, 'users');
    for (const [path, token, body] of [
      ['/v1/auth/sessions', undefined, { email: `a${NUL}b@example.test`, password: 'correct horse battery' }],
      [
        '/v1/auth/signup',
        undefined,
        { email: 'nul@example.test', password: 'correct horse battery', name: `N${NUL}` },
      ],
      [
        '/v1/auth/signup',
        undefined,
        { email: 'bell@example.test', password: 'correct horse battery', name: 'a\u0007' },
      ],
      ['/v1/companies', company.owner.token, { name: `Acme${NUL}` }],
      ['/v1/shipments', company.liveToken, { recipient_name: `Ada${NUL}`, currency: 'EUR' }],
      [
        '/v1/shipments',
        company.liveToken,
        { recipient_name: 'Ada', currency: 'EUR', external_ref: `r${NUL}` },
      ],
      [
        '/v1/webhook-endpoints',
        company.liveToken,
        { url: 'https://hooks.example.test/', event_types: ['shipment.created'], description: `d${NUL}` },
      ],
    ] as const) {
      const response = await call(w, 'POST', path, { token, body });
      expectProblem(response, 400, 'validation.failed');
      expect(response.body.errors[0].message, path).toMatch(/control character/);
    }
    expect(await countRows(w, 'users')).toBe(before);
  });

  it('descriptions keep their newlines and tabs', async () => {
    const response = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: {
        url: 'http://127.0.0.1:9/lines',
        event_types: ['shipment.created'],
        description: 'first line\n\tsecond line\r\n',
      },
    });
    expect(response.status, response.text).toBe(201);
    expect(response.body.description).toContain('\n\tsecond line');
  });

  it('lone surrogates in JSON strings are refused; paired ones (emoji) pass', async () => {
    for (const raw of ['{"name":"\\ud800"}', '{"name":"x\\udfff"}', '{"\\ud800":"x"}']) {
      const response = await call(w, 'POST', '/v1/companies', {
        token: company.owner.token,
        rawBody: raw,
        headers: { 'content-type': 'application/json' },
      });
      expectProblem(response, 400, 'validation.failed');
    }
    const ok = await call(w, 'POST', '/v1/companies', {
      token: company.owner.token,
      rawBody: '{"name":"Parcels \\ud83d\\udce6"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.name).toBe('Parcels 📦');
  });

  it('paths and queries: /v1/shipments/ab%00cd, a NUL in a filter', async () => {
    const token = company.liveToken;
    expectProblem(await call(w, 'GET', '/v1/shipments/ab%00cd', { token }), 400, 'validation.failed');
    expectProblem(
      await call(w, 'GET', '/v1/shipments?customer_account_id=a%00b', { token }),
      400,
      'validation.failed',
    );
    expectProblem(await call(w, 'GET', '/v1/events?shipment_id=%01', { token }), 400, 'validation.failed');
  });

  it('cursors carrying a NUL, a date PostgreSQL cannot hold, or junk', async () => {
    const token = company.liveToken;
    await createShipment(w, token);
    for (const cursor of [
      cursorOf(['2026-01-01T00:00:00.000Z', `shp_${NUL}`]),
      cursorOf(['-100000-01-01T00:00:00.000Z', 'shp_x']),
      cursorOf(['+275760-09-13T00:00:00.000Z', 'shp_x']),
      cursorOf(['0000-01-01T00:00:00.000Z', 'shp_x']),
      cursorOf(['2026-02-31T00:00:00.000Z', 'shp_x']),
      cursorOf(['2026-01-01T00:00:00.000Z', 'x'.repeat(300)]),
      cursorOf(['2026-01-01T00:00:00.000Z', 'shp_x', 'extra']),
      cursorOf([1, 'shp_x']),
      cursorOf('2026'),
      '%%%',
    ]) {
      const response = await call(w, 'GET', `/v1/shipments?cursor=${encodeURIComponent(cursor)}`, { token });
      expectProblem(response, 400, 'validation.failed');
    }
    // A cursor this service made still works.
    const first = await call(w, 'GET', '/v1/shipments?limit=1', { token });
    expect(first.status).toBe(200);
    const again = await call(
      w,
      'GET',
      `/v1/shipments?cursor=${encodeCursor({ createdAt: new Date(), id: 'shp_z' })}`,
      {
        token,
      },
    );
    expect(again.status).toBe(200);
  });

  it('the dashboard list cursor is bounded the same way', async () => {
    const client = await signInInBrowser(w, company.owner.email);
    const page = await client.get(
      `/dashboard/shipments?cursor=${cursorOf(['-100000-01-01T00:00:00.000Z', 'x'])}`,
    );
    expect(page.status).toBe(400);
  });
});

describe('OAuth endpoints keep their error formats', () => {
  it('/oauth/token and /oauth/revoke: a NUL in client_id, and Basic credentials that decode to NUL', async () => {
    for (const path of ['/oauth/token', '/oauth/revoke']) {
      const form = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'atr_x',
        token: 'atr_x',
      });
      const headersList: Array<Record<string, string>> = [
        { authorization: `Basic ${Buffer.from(`app_${NUL}:secret`).toString('base64')}` },
        { authorization: `Basic ${Buffer.from(`app_x:se${NUL}cret`).toString('base64')}` },
        { authorization: basic(`app_${NUL}`, 'secret') },
        { authorization: `Basic ${Buffer.from([0x61, 0x3a, 0xff, 0xfe]).toString('base64')}` },
        {},
      ];
      for (const headers of headersList) {
        const body = headers.authorization ? form.toString() : `client_id=app_%00&${form}`;
        const response = await fetch(`${w.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
          body,
        });
        const json = await response.json();
        expectOAuthError({ status: response.status, body: json }, ['invalid_request', 'invalid_client']);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      }
    }
  });

  it('/oauth/token and /oauth/revoke over the wire: raw NUL and control bytes in Basic credentials or the body are RFC 6749 errors', async () => {
    for (const path of ['/oauth/token', '/oauth/revoke']) {
      const body = 'grant_type=refresh_token&refresh_token=atr_x&token=atr_x';
      const rawBody = `grant_type=refresh_token&token=x&client_id=app_${NUL}x&client_secret=s${NUL}`;
      for (const request of [
        // The HTTP parser itself refuses these: a NUL or another control byte in the header.
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic app_${NUL}:secret\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YXBw\u0001OnNlY3JldA==\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        `POST ${path}?client_id=a HTTP/1.1\r\nHost: x\r\nAuthorization: Basic \u007f\r\nContent-Length: 0\r\n\r\n`,
        // A raw NUL in the form body reaches the endpoint.
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${rawBody.length}\r\n\r\n${rawBody}`,
      ]) {
        const answer = headersAndBody(await rawHttp(w, request));
        expect(answer.status, JSON.stringify(request)).toBeGreaterThanOrEqual(400);
        expect(answer.status, JSON.stringify(request)).toBeLessThan(500);
        expect(answer.headers['content-type'], JSON.stringify(request)).toMatch(/^application\/json/);
        expectOAuthError({ status: answer.status, body: JSON.parse(answer.body) }, [
          'invalid_request',
          'invalid_client',
        ]);
      }
    }
  });

  it('/oauth/token given a deep JSON body or a form with a lone surrogate answers invalid_request', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const response = await fetch(`${w.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: deep,
    });
    expectOAuthError({ status: response.status, body: await response.json() }, ['invalid_request']);
    const surrogate = await fetch(`${w.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=%ED%A0%80&client_id=app_x',
    });
    expect(surrogate.status).toBeLessThan(500);
  });

  it('/oauth/authorize: a NUL in client_id is the error page; an over-long state is refused with it, not redirected', async () => {
    const nul = await fetch(`${w.url}/oauth/authorize?client_id=app_%00&redirect_uri=x`, {
      redirect: 'manual',
    });
    expect(nul.status).toBe(400);
    const longState = new URLSearchParams({
      response_type: 'code',
      client_id: oauthApp.clientId,
      redirect_uri: oauthApp.redirectUri,
      state: 's'.repeat(10_000),
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const response = await fetch(`${w.url}/oauth/authorize?${longState}`, { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('/apps/app_%00/install is a 400, not a 500', async () => {
    const response = await fetch(`${w.url}/apps/app_%00/install`, { redirect: 'manual' });
    expect(response.status).toBe(400);
  });
});

describe('pages', () => {
  it('return_to with a newline never reaches a Location header', async () => {
    const client = await signInInBrowser(w, company.owner.email);
    for (const path of [
      '/signin?return_to=/%0a/x',
      '/dashboard/switch?tenant=x&return_to=/%0d%0aSet-Cookie:x=1',
    ]) {
      const response = await client.get(path);
      expect(response.status, path).toBe(400);
    }
  });

  it('forms refuse JSON bodies (they would carry numbers and objects where text belongs)', async () => {
    const client = await signInInBrowser(w, company.owner.email);
    await client.get('/dashboard/companies/new');
    const cookie = [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    for (const [path, body] of [
      ['/dashboard/companies', { _csrf: client.csrf, name: 5 }],
      ['/dashboard/api-tokens', { _csrf: client.csrf, name: { a: 1 }, mode: 'live' }],
      ['/developer/apps', { _csrf: client.csrf, name: ['x'], description: 7 }],
      [
        '/signup',
        { _csrf: client.csrf, name: 5, email: 'x@example.test', password: 'correct horse battery' },
      ],
    ] as const) {
      const response = await fetch(`${w.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie },
        body: JSON.stringify(body),
        redirect: 'manual',
      });
      // Problem details, or the dashboard's error page (its plugin answers people with pages).
      expect(response.status, path).toBe(415);
    }
  });

  it('a form field with a NUL is refused; a textarea keeps its newlines', async () => {
    const client = await signInInBrowser(w, company.owner.email);
    await client.get('/dashboard/companies/new');
    const companies = await countRows(w, 'companies');
    const refused = await client.post('/dashboard/companies', { name: `Acme${NUL}` });
    expect(refused.status).toBe(400);
    expect(await countRows(w, 'companies')).toBe(companies);
    await client.get('/developer/apps/new');
    const registered = await client.post('/developer/apps', {
      name: 'Two Lines',
      description: 'First line\r\n\tsecond line',
      redirect_uris: 'https://a.example/cb\r\nhttps://b.example/cb',
      scopes: 'shipments:read',
      kind: 'public',
    });
    expect(registered.status, registered.text.slice(0, 300)).toBe(303);
    const app = await w.ctx.db
      .selectFrom('apps')
      .select(['description', 'redirect_uris'])
      .where('name', '=', 'Two Lines')
      .executeTakeFirstOrThrow();
    expect(app.description).toBe('First line\r\n\tsecond line');
    expect(app.redirect_uris).toEqual(['https://a.example/cb', 'https://b.example/cb']);
  });
});

describe('deep JSON', () => {
  const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
  const deepObject = `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`;

  it('is refused at parse time everywhere: routes without a body schema, unknown /v1 paths, with and without a token', async () => {
    const json = { 'content-type': 'application/json', 'idempotency-key': 'deep-1' };
    for (const [path, token] of [
      ['/v1/nothing-here', undefined],
      ['/v1/nothing-here', company.liveToken],
      ['/v1/auth/signup', undefined],
      ['/v1/companies/00000000-0000-0000-0000-000000000000/go-live', company.owner.token],
      ['/v1/webhook-endpoints/we_x/rotate-secret', company.liveToken],
    ] as const) {
      for (const rawBody of [deep, deepObject]) {
        const response = await call(w, 'POST', path, { token, rawBody, headers: json });
        expectProblem(response, 400, 'request.too_deep');
      }
    }
  });

  it('a body nested a reasonable depth still passes', async () => {
    const response = await call(w, 'POST', '/v1/shipments', {
      token: company.testToken,
      body: { recipient_name: 'Ada', currency: 'EUR', parcels: [{ weight_grams: 100 }] },
    });
    expect(response.status).toBe(201);
  });
});

describe("Fastify's own refusals are problem details too", () => {
  it('an id past the router limit (414), %zz in a path (400), unknown routes and methods (404)', async () => {
    const token = company.liveToken;
    expectProblem(
      await call(w, 'GET', `/v1/shipments/${'x'.repeat(300)}`, { token }),
      414,
      'request.uri_too_long',
    );
    expectProblem(await call(w, 'GET', '/v1/shipments/%zz', { token }), 400, 'request.bad_url');
    expectProblem(await call(w, 'GET', '/dashboard/shipments/%zz'), 400, 'request.bad_url');
    expectProblem(await call(w, 'GET', '/nowhere'), 404, 'request.not_found');
    const options = await w.app.inject({ method: 'OPTIONS', url: '/v1/shipments' });
    expect(options.statusCode).toBe(404);
    expect(options.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it("a malformed Expect header is a 417 problem (not Node's empty 417); at /oauth/token the RFC 6749 format", async () => {
    for (const expectation of ['bogus', '200-ok']) {
      const answer = headersAndBody(
        await rawHttp(w, `GET /v1/me HTTP/1.1\r\nHost: x\r\nExpect: ${expectation}\r\n\r\n`),
      );
      expect(answer.status, expectation).toBe(417);
      expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(answer.body)).toMatchObject({ status: 417, code: 'request.expectation_failed' });
    }
    const oauth = headersAndBody(
      await rawHttp(
        w,
        'POST /oauth/token HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 12\r\n\r\ngrant_type=x',
      ),
    );
    expect(oauth.status).toBe(417);
    expect(oauth.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(oauth.body)).toMatchObject({ error: 'invalid_request' });
    // Expect: 100-continue still works as it should.
    const proceed = await rawHttp(
      w,
      'POST /v1/auth/sessions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
    );
    expect(proceed).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect(proceed).toMatch(/HTTP\/1\.1 400 /);
  });

  it('a Content-Length that disagrees with the body, or two of them, is a 400 problem over the wire', async () => {
    for (const head of [
      'POST /v1/auth/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}',
      'POST /v1/auth/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      'POST /v1/auth/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}',
      'GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n',
    ]) {
      const answer = headersAndBody(await rawHttp(w, head));
      expect(answer.status, head).toBe(400);
      expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(answer.body)).toMatchObject({ status: 400, code: 'request.bad_request' });
    }
  });
});

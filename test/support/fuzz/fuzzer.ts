import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Scope } from '../../../src/modules/accounts/roles.ts';
import { startSession } from '../../../src/modules/accounts/users.ts';
import { install, issueAppTokens } from '../../apps/fixtures.ts';
import type { Json } from '../api.ts';
import type { TestWaybill } from '../harness.ts';
import { checkReceived } from '../message-check.ts';
import { Random } from './random.ts';
import { HOSTILE_CURSORS, hostileString, hostileValue, type Known, type Schema, valueFor } from './values.ts';

/**
 * A property-based bad-input test driven by the OpenAPI document and the route table: every
 * operation, the OAuth endpoints and the page forms, with hostile values in every place input
 * enters, with and without valid tokens, deterministic by seed. The property: no answer is a 5xx,
 * and every error of the API is problem details with a code (the OAuth endpoints: RFC 6749 JSON).
 */

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

export interface Target {
  method: Method;
  /** Fastify's form: `/v1/shipments/:id`. */
  path: string;
  kind: 'api' | 'oauth' | 'page';
  operation: Json | null;
}

export interface FuzzRequest {
  method: Method;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  remoteAddress: string;
}

export interface Failure {
  index: number;
  request: FuzzRequest;
  status: number;
  problem: string;
  body: string;
}

export interface FuzzResult {
  requests: number;
  statuses: Map<number, number>;
  failures: Failure[];
  targets: number;
}

/** Every route Fastify knows, from its printed route tree (the only public listing it offers). */
export function routeTable(app: FastifyInstance): Array<{ method: Method; path: string }> {
  const routes: Array<{ method: Method; path: string }> = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const level = (match[1] as string).length / 4;
    stack.length = level;
    const parent = stack[level - 1] ?? '';
    const path =
      parent.endsWith('/') && (match[2] as string).startsWith('/')
        ? parent + (match[2] as string).slice(1)
        : parent + (match[2] as string);
    stack[level] = path;
    for (const method of (match[3] ?? '').split(', ').filter(Boolean)) {
      routes.push({ method: method as Method, path: path.startsWith('/') ? path : `/${path}` });
    }
  }
  return routes;
}

export function targetsOf(app: FastifyInstance, doc: Json): Target[] {
  return routeTable(app)
    .filter(({ path }) => !path.startsWith('/docs') && path !== '/static/waybill.css')
    .map(({ method, path }) => {
      const openapiPath = path.replace(/:([A-Za-z_]+)/g, '{$1}');
      const operation = doc.paths[openapiPath]?.[method.toLowerCase()] ?? null;
      const kind = path.startsWith('/v1/') ? 'api' : path.startsWith('/oauth/') ? 'oauth' : 'page';
      return { method, path, kind, operation };
    });
}

/** A signed-in person with a company, tokens, an app, an endpoint, a shipment and a delivery. */
export interface Fixtures {
  send: Send;
  email: string;
  csrfCookie: string;
  session: string;
  userId: string;
  tenantId: string;
  liveToken: string;
  testToken: string;
  appToken: string;
  appId: string;
  appSecret: string;
  redirectUri: string;
  byParam: Record<string, string[]>;
  cookie: string;
  csrf: string;
  known: Known;
}

const PASSWORD = 'correct horse battery';
const REDIRECT_URI = 'http://localhost:8080/callback';
const ALL_SCOPES = ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'];

/** A receiver for the endpoints' test messages: answers 200 at once. */
export async function startReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      checkReceived(
        { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') },
        'the fuzz receiver',
      );
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Send = (method: Method, url: string, token?: string, body?: unknown) => Promise<Json>;

function sender(w: TestWaybill, remoteAddress: string): Send {
  return async (method, url, token, body) => {
    const response = await w.app.inject({
      method,
      url,
      remoteAddress,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    if (response.statusCode >= 300) {
      throw new Error(`fixture ${method} ${url}: ${response.statusCode} ${response.body}`);
    }
    return response.body ? (JSON.parse(response.body) as Json) : null;
  };
}

export async function makeFixtures(w: TestWaybill, receiverUrl: string, round: number): Promise<Fixtures> {
  // Each round from its own address: the sign-up and sign-in limits count per address.
  const send = sender(w, `10.200.${Math.floor(round / 250) % 250}.${round % 250}`);
  const email = `fuzz-${round}-${Date.now()}@example.test`;
  const person = await send('POST', '/v1/auth/signup', undefined, {
    email,
    password: PASSWORD,
    name: 'Fuzz',
  });
  const session = (await send('POST', '/v1/auth/sessions', undefined, { email, password: PASSWORD })).token;
  const tenantId = (await send('POST', '/v1/companies', session, { name: 'Fuzz Company' })).id;
  const account = await send('POST', `/v1/companies/${tenantId}/customer-accounts`, session, {
    name: 'Shop',
  });
  const live = (
    await send('POST', `/v1/companies/${tenantId}/api-tokens`, session, {
      name: 'live',
      mode: 'live',
      scopes: ALL_SCOPES,
    })
  ).token;
  const eventTypes = (await send('GET', '/v1/webhook-event-types?sent_to=webhook_endpoints', live)).data.map(
    (t: Json) => t.type,
  );
  const endpoint = await send('POST', '/v1/webhook-endpoints', live, {
    url: receiverUrl,
    event_types: eventTypes,
  });
  const shipments = [];
  for (let i = 0; i < 2; i++) {
    const body = { recipient_name: 'Ada', currency: 'EUR', customer_account_id: account.id };
    shipments.push(await send('POST', '/v1/shipments', live, body));
  }
  const cursor = (await send('GET', '/v1/shipments?limit=1', live)).next_cursor;
  const delivery = (await send('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, live)).data[0];
  const app = await send('POST', '/v1/developer/apps', session, {
    name: 'Fuzz App',
    description: 'An app of the fuzzer',
    homepage_url: 'https://fuzz.example/',
    privacy_url: 'https://fuzz.example/privacy',
    support_url: 'https://fuzz.example/support',
    redirect_uris: [REDIRECT_URI],
    scopes: ALL_SCOPES,
    kind: 'confidential',
  });
  // The pages' CSRF token and its cookie, as a browser holds them.
  const page = await w.app.inject({ method: 'GET', url: '/signin' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  const csrfCookie = page.cookies.find((c) => c.name === '_csrf')?.value ?? '';
  const fixtures: Fixtures = {
    send,
    email,
    session: '',
    userId: person.id,
    tenantId,
    liveToken: '',
    testToken: '',
    appToken: '',
    appId: app.id,
    appSecret: app.client_secret,
    redirectUri: REDIRECT_URI,
    csrfCookie,
    byParam: {
      tenant_id: [tenantId],
      user_id: [person.id],
      userId: [person.id],
      shipments: shipments.map((s) => s.id),
      'webhook-endpoints': [endpoint.id],
      webhooks: [endpoint.id],
      'webhook-deliveries': [delivery?.id ?? 'dlv_none'],
      deliveries: [delivery?.id ?? 'dlv_none'],
      apps: [app.id],
    },
    cookie: '',
    csrf,
    known: {
      ids: [
        ...shipments.map((s) => s.id),
        endpoint.id,
        delivery?.id ?? 'dlv_none',
        app.id,
        account.id,
        person.id,
      ],
      tenantIds: [tenantId],
      urls: [receiverUrl, 'https://fuzz.example/a', REDIRECT_URI, 'https://x.invalid/', 'ftp://x'],
      eventTypes,
      cursors: [cursor ?? '', ...HOSTILE_CURSORS.slice(0, 2)],
    },
  };
  return renewCredentials(w, fixtures);
}

/**
 * New credentials for the same person and company: a session (no password hashing), live and
 * test API tokens, the app installed again with a new access token. Cheap enough to run after
 * every request that may have signed out or revoked what the others use.
 */
export async function renewCredentials(w: TestWaybill, fixtures: Fixtures): Promise<Fixtures> {
  const { send, tenantId, userId } = fixtures;
  const user = await w.ctx.db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  const session = (await startSession(w.ctx, user)).token;
  const token = (mode: string) =>
    send('POST', `/v1/companies/${tenantId}/api-tokens`, session, { name: mode, mode, scopes: ALL_SCOPES });
  const live = await token('live');
  const test = await token('test');
  const installation = await install(w, {
    appId: fixtures.appId,
    tenantId,
    userId,
    scopes: ALL_SCOPES as Scope[],
  });
  const { accessToken } = await issueAppTokens(w, {
    appId: fixtures.appId,
    installationId: installation.id,
    userId,
    scopes: ALL_SCOPES as Scope[],
  });
  return {
    ...fixtures,
    session,
    liveToken: live.token,
    testToken: test.token,
    appToken: accessToken,
    cookie: `waybill_session=${session}; _csrf=${fixtures.csrfCookie}`,
    byParam: {
      ...fixtures.byParam,
      tok_id: [live.id, test.id],
      'api-tokens': [live.id, test.id],
      inst_id: [installation.id],
    },
  };
}

/** UTF-8 %-encoding of anything, lone surrogates included (encodeURIComponent throws on them). */
export function percentEncode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9_.~-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Header values as the wire carries them: Latin-1, no control characters (Node refuses those). */
function headerSafe(value: string): string {
  return [...value]
    .map((c) => (c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) <= 0xff && c !== '\u007f' ? c : '?'))
    .join('')
    .slice(0, 8000);
}

function queryString(random: Random, params: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    for (const one of Array.isArray(value) && random.chance(0.5) ? value : [value]) {
      const text = typeof one === 'string' ? one : (JSON.stringify(one) ?? '');
      parts.push(`${percentEncode(name)}=${percentEncode(text)}`);
    }
  }
  if (random.chance(0.05))
    parts.push(random.pick(['%zz=1', 'a=%zz', '=', '&&', 'a[b]=1', 'limit=1&limit=2']));
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

function pathFor(random: Random, target: Target, fixtures: Fixtures): string {
  const segments = target.path.split('/');
  return segments
    .map((segment, i) => {
      if (!segment.startsWith(':')) return segment;
      const name = segment.slice(1);
      const real = fixtures.byParam[name === 'id' ? (segments[i - 1] as string) : name];
      if (real && random.chance(0.75)) return random.pick(real);
      return random.weighted<() => string>([
        [6, () => percentEncode(hostileString(random))],
        [1, () => '%zz'],
        [1, () => '%00'],
        [1, () => 'x'.repeat(random.pick([199, 200, 201, 1000]))],
        [1, () => percentEncode(random.pick(fixtures.known.ids))],
      ])();
    })
    .join('/');
}

/** Field names of the pages' and OAuth endpoints' forms, and a few no form has. */
const FORM_FIELDS = [
  'name',
  'email',
  'password',
  'return_to',
  'description',
  'url',
  'event_types',
  'status',
  'exception_reason',
  'recipient_name',
  'recipient_email',
  'recipient_phone',
  'external_ref',
  'currency',
  'payment_mode',
  'cod_amount',
  'customer_account_id',
  'mode',
  'scopes',
  'role',
  'kind',
  'redirect_uris',
  'homepage_url',
  'privacy_url',
  'support_url',
  'events_url',
  'livemode',
  'account',
  'decision',
  'tenant',
  'user_id',
  'event_type',
  'weight_grams',
  'client_id',
  'client_secret',
  'grant_type',
  'code',
  'redirect_uri',
  'code_verifier',
  'refresh_token',
  'token',
  'token_type_hint',
  'response_type',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  '__proto__',
] as const;

function formValue(random: Random, field: string, fixtures: Fixtures): string | string[] {
  const plausible: Record<string, () => string> = {
    grant_type: () => random.pick(['authorization_code', 'refresh_token', 'password', 'client_credentials']),
    client_id: () => fixtures.appId,
    client_secret: () => fixtures.appSecret,
    redirect_uri: () => fixtures.redirectUri,
    response_type: () => 'code',
    code_challenge: () => 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: () => 'S256',
    scope: () => random.pick(['shipments:read', 'shipments:read webhooks:write', 'admin']),
    state: () => random.pick(['xyz', 's'.repeat(1001)]),
    code_verifier: () => 'a'.repeat(random.pick([42, 43, 128, 129])),
    token: () => random.pick([fixtures.appToken, fixtures.liveToken, 'atr_x']),
    refresh_token: () => 'atr_x',
    code: () => 'atc_x',
    decision: () => random.pick(['approve', 'deny']),
    account: () => random.pick([fixtures.tenantId, ...fixtures.known.ids]),
    tenant: () => fixtures.tenantId,
    mode: () => random.pick(['live', 'test']),
    return_to: () => random.pick(['/dashboard', '//evil.example', '/\t/evil.example', '/x\u0000']),
    email: () => `form${random.int(0, 1e9)}@example.test`,
    password: () => PASSWORD,
  };
  const make = Object.hasOwn(plausible, field) ? plausible[field] : undefined;
  const one = () =>
    random.chance(0.6) && make ? make() : random.chance(0.5) ? 'Plain text' : hostileString(random);
  return random.chance(0.1) ? [one(), one()] : one();
}

/** Complete, valid forms and queries of the routes that need several fields to go anywhere. */
function recipe(path: string, fixtures: Fixtures, random: Random): Record<string, string | string[]> | null {
  const authorize = {
    response_type: 'code',
    client_id: fixtures.appId,
    redirect_uri: fixtures.redirectUri,
    scope: 'shipments:read webhooks:write',
    state: 'fuzz-state',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  };
  const client: Record<string, string> = random.chance(0.5)
    ? { client_id: fixtures.appId, client_secret: fixtures.appSecret }
    : {};
  switch (path) {
    case '/oauth/authorize':
      return { ...authorize, decision: random.pick(['approve', 'deny']), account: fixtures.tenantId };
    case '/oauth/token':
      return { ...client, grant_type: 'refresh_token', refresh_token: 'atr_unknown' };
    case '/oauth/revoke':
      return { ...client, token: random.pick([fixtures.appToken, 'atk_live_unknown']) };
    case '/signin':
    case '/v1/auth/sessions':
      return { email: fixtures.email, password: PASSWORD, return_to: '/dashboard' };
    case '/signup':
      return { name: 'Fuzz', email: `signup-${random.int(0, 1e9)}@example.test`, password: PASSWORD };
    default:
      return null;
  }
}

/** Fields of a form or query: a route's recipe with a few fields spoilt, or fields at random. */
function formFields(random: Random, path: string, fixtures: Fixtures, hostility: number) {
  const fields: Record<string, string | string[]> = {};
  const base = random.chance(0.6) ? recipe(path, fixtures, random) : null;
  if (base) {
    Object.assign(fields, base);
    for (const name of Object.keys(base)) {
      if (random.chance(hostility))
        fields[name] = random.chance(0.2) ? [hostileString(random), 'x'] : hostileString(random);
      else if (random.chance(hostility / 2)) delete fields[name];
    }
  }
  for (let i = base ? (random.chance(hostility) ? 1 : 0) : random.int(0, 7); i > 0; i--) {
    const field = random.pick(FORM_FIELDS);
    fields[field] = formValue(random, field, fixtures);
  }
  return fields;
}

function formBody(fields: Record<string, string | string[]>, fixtures: Fixtures, withCsrf: boolean): string {
  const parts: string[] = [];
  if (withCsrf) parts.push(`_csrf=${percentEncode(fixtures.csrf)}`);
  for (const [field, value] of Object.entries(fields)) {
    for (const one of Array.isArray(value) ? value : [value])
      parts.push(`${percentEncode(field)}=${percentEncode(one)}`);
  }
  return parts.join('&');
}

/** A JSON body, or something that only claims to be one. */
function jsonBody(random: Random, schema: Schema, known: Known, hostility: number): string {
  return random.weighted<() => string>([
    [
      Math.round(2 / (hostility + 0.02)),
      () => JSON.stringify(valueFor(random, schema, known, hostility) ?? null),
    ],
    [1, () => `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
    [1, () => `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`],
    [1, () => '{"name": "\\ud800", "x": "\\u0000"}'],
    [1, () => '{"__proto__": {"admin": true}, "constructor": {"prototype": {"x": 1}}}'],
    [1, () => '{"a":1,'],
    [1, () => ''],
    [1, () => '\ufeff{}'],
    [1, () => 'x'.repeat(random.pick([100, 70_000]))],
    [1, () => JSON.stringify(hostileValue(random))],
  ])();
}

function authorization(random: Random, target: Target, fixtures: Fixtures): Record<string, string> {
  if (target.kind !== 'api') return {};
  // Mostly the kind of token the operation asks for, so that requests get past authorisation.
  const wanted = Object.keys(target.operation?.security?.[0] ?? {})[0];
  if (wanted && random.chance(0.7)) {
    const token =
      wanted === 'session'
        ? fixtures.session
        : random.weighted([
            [3, fixtures.liveToken],
            [1, fixtures.testToken],
            [1, fixtures.appToken],
          ]);
    return { authorization: `Bearer ${token}` };
  }
  const token = random.weighted<string | null>([
    [2, null],
    [4, fixtures.session],
    [3, fixtures.liveToken],
    [1, fixtures.testToken],
    [2, fixtures.appToken],
    [1, 'sk_live_0000000000000000000000000000000000000000000'],
    [1, headerSafe(hostileString(random))],
  ]);
  if (token === null) return {};
  return { authorization: random.chance(0.95) ? `Bearer ${token}` : headerSafe(`Basic ${token}`) };
}

function basicHeader(random: Random, fixtures: Fixtures): Record<string, string> {
  if (!random.chance(0.4)) return {};
  const credentials = random.weighted<() => string>([
    [3, () => `${fixtures.appId}:${fixtures.appSecret}`],
    [2, () => `${hostileString(random)}:${hostileString(random)}`],
    [1, () => 'no-colon'],
  ])();
  const encoded = random.chance(0.9) ? Buffer.from(credentials).toString('base64') : headerSafe(credentials);
  return { authorization: `Basic ${encoded}` };
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json-patch+json',
  '',
  ';;;',
];

const SLOW_TARGET = /^POST \/(v1\/auth\/(signup|sessions)|signin|signup)$/;

/** Request `index` of a run: drawn from its own stream, so it is the same whatever came before. */
export function buildRequest(
  seed: number,
  index: number,
  targets: Target[],
  fixtures: Fixtures,
): FuzzRequest {
  const random = new Random(seed, index);
  let target = random.pick(targets);
  // Routes that hash a password (about 50 ms each, by design) come up a third as often.
  if (SLOW_TARGET.test(`${target.method} ${target.path}`) && random.chance(0.67))
    target = random.pick(targets);
  // How many of the request's values are hostile: none (edge values only), a few, or many.
  const hostility = random.pick([0, 0.03, 0.1, 0.3]);
  const headers: Record<string, string> = {};
  let payload: string | undefined;
  let query: Record<string, unknown> = {};
  const withBody = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(target.method);

  if (target.kind === 'api') {
    Object.assign(headers, authorization(random, target, fixtures));
    for (const parameter of target.operation?.parameters ?? []) {
      if (parameter.in === 'query' && random.chance(0.5)) {
        query[parameter.name] = valueFor(random, parameter.schema, fixtures.known, hostility, parameter.name);
      }
    }
    if (withBody && (target.operation?.requestBody || random.chance(0.3))) {
      const schema = target.operation?.requestBody?.content?.['application/json']?.schema;
      const signIn = target.path === '/v1/auth/sessions' && random.chance(0.5);
      payload = signIn
        ? JSON.stringify({
            email: fixtures.email,
            password: random.chance(1 - hostility) ? PASSWORD : hostileString(random),
          })
        : jsonBody(random, schema, fixtures.known, hostility);
      headers['content-type'] = random.chance(1 - hostility)
        ? 'application/json'
        : random.pick(CONTENT_TYPES);
    }
    if (target.method === 'POST' && random.chance(0.2)) {
      headers['idempotency-key'] = headerSafe(
        random.chance(0.7) ? `key-${random.int(0, 20)}` : hostileString(random),
      );
    }
  } else {
    const signedIn = random.chance(0.75);
    if (signedIn) headers.cookie = fixtures.cookie;
    else if (random.chance(0.2))
      headers.cookie = headerSafe(
        `waybill_session=${hostileString(random)}; waybill_view=${hostileString(random)}`,
      );
    if (target.path === '/oauth/token' || target.path === '/oauth/revoke')
      Object.assign(headers, basicHeader(random, fixtures));
    if (target.method === 'GET' || target.method === 'HEAD') {
      query = formFields(random, target.path, fixtures, hostility);
      if (random.chance(0.3)) query.cursor = random.pick([...fixtures.known.cursors, ...HOSTILE_CURSORS]);
    } else if (withBody) {
      const fields = formFields(random, target.path, fixtures, hostility);
      payload = random.chance(0.85)
        ? formBody(fields, fixtures, signedIn && random.chance(0.9))
        : jsonBody(random, undefined, fixtures.known, hostility);
      headers['content-type'] = random.chance(0.85)
        ? 'application/x-www-form-urlencoded'
        : random.pick(CONTENT_TYPES);
    }
  }
  if (random.chance(hostility))
    query = { ...query, [hostileString(random).slice(0, 10)]: hostileString(random) };
  const url = pathFor(random, target, fixtures) + queryString(random, query);
  if (headers['content-type'] === '') delete headers['content-type'];
  return {
    method: target.method,
    url,
    headers,
    ...(payload !== undefined ? { payload } : {}),
    remoteAddress: `10.${random.int(0, 255)}.${random.int(0, 255)}.${random.int(1, 254)}`,
  };
}

/** What every answer must be: never a 5xx, and errors in the format of where they come from. */
function checkAnswer(request: FuzzRequest, status: number, type: string, body: string): string | null {
  if (status >= 500) return `answered ${status}`;
  if (status < 400 || request.method === 'HEAD') return null;
  const path = request.url.split('?')[0] as string;
  if (path === '/oauth/token' || path === '/oauth/revoke') {
    return /"error":"[a-z_]+"/.test(body) ? null : 'an OAuth error without the RFC 6749 error field';
  }
  if (path.startsWith('/v1/') && !/^application\/problem\+json/.test(type))
    return `a ${status} that is ${type}, not problem details`;
  if (/^application\/problem\+json/.test(type) && !/"code":"[a-z_.]+"/.test(body))
    return 'problem details without a code';
  return null;
}

/**
 * Requests that may have signed the fixtures' person out, or revoked a token or the installation
 * that other requests use: new credentials follow them, so that the run keeps going deep. (What
 * else a request removes, an endpoint or a shipment, comes back with the next full fixtures.)
 */
const SPENDS_CREDENTIALS =
  /^(DELETE|POST) \/(v1\/auth\/sessions\/current|signout|oauth\/revoke|v1\/companies\/[^/]+\/(api-tokens|installations)\/|dashboard\/(api-tokens|apps)\/)/;

export interface RunOptions {
  seed: number;
  requests: number;
  /** New fixtures every this many requests (the fuzzer may sign out, revoke or delete them). */
  refreshEvery?: number;
  onProgress?: (done: number, result: FuzzResult) => void;
}

export async function runFuzz(w: TestWaybill, options: RunOptions): Promise<FuzzResult> {
  // Endpoint and events URLs with names must not wait for DNS: none resolves.
  w.ctx.resolveHost = async () => [];
  const receiver = await startReceiver();
  const doc = JSON.parse((await w.app.inject({ method: 'GET', url: '/openapi.json' })).body);
  const targets = targetsOf(w.app, doc);
  const result: FuzzResult = { requests: 0, statuses: new Map(), failures: [], targets: targets.length };
  const refreshEvery = options.refreshEvery ?? 1000;
  let fixtures: Fixtures | null = null;
  let round = 0;
  let spent = false;
  try {
    for (let index = 0; index < options.requests; index++) {
      if (fixtures === null || index % refreshEvery === 0)
        fixtures = await makeFixtures(w, receiver.url, round++);
      else if (spent) fixtures = await renewCredentials(w, fixtures);
      const request = buildRequest(options.seed, index, targets, fixtures);
      const response = await w.app.inject({ ...request });
      spent = response.statusCode < 400 && SPENDS_CREDENTIALS.test(`${request.method} ${request.url}`);
      result.requests++;
      result.statuses.set(response.statusCode, (result.statuses.get(response.statusCode) ?? 0) + 1);
      const problem = checkAnswer(
        request,
        response.statusCode,
        String(response.headers['content-type'] ?? ''),
        response.body,
      );
      if (problem)
        result.failures.push({
          index,
          request,
          status: response.statusCode,
          problem,
          body: response.body.slice(0, 500),
        });
      if (options.onProgress && (index + 1) % 1000 === 0) options.onProgress(index + 1, result);
    }
  } finally {
    await receiver.close();
  }
  return result;
}

/** A failure as a person reads it: enough to send the same request again. */
export function describeFailure(failure: Failure, seed: number): string {
  const { request } = failure;
  const payload =
    request.payload === undefined
      ? ''
      : `\n  body: ${JSON.stringify(request.payload.slice(0, 1000))}${request.payload.length > 1000 ? ` (${request.payload.length} characters)` : ''}`;
  return `request ${failure.index} of seed ${seed}: ${failure.problem}\n  ${request.method} ${request.url.slice(0, 2000)}\n  headers: ${JSON.stringify(request.headers)}${payload}\n  answer: ${failure.body}`;
}

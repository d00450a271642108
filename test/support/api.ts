import type { TestWaybill } from './harness.ts';

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: T;
  text: string;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send this exact text as the body (for malformed JSON and content-type tests). */
  rawBody?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely and assert on them.
export type Json = any;

/** One API call through Fastify's inject: the whole HTTP pipeline without a socket. */
export async function call(
  w: TestWaybill,
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
  url: string,
  options: CallOptions = {},
): Promise<ApiResponse<Json>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let payload: string | undefined;
  if (options.rawBody !== undefined) payload = options.rawBody;
  else if (options.body !== undefined) {
    payload = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await w.app.inject({
    method,
    url,
    headers,
    ...(payload !== undefined ? { payload } : {}),
  });
  let body: Json = null;
  if (response.body) {
    try {
      body = JSON.parse(response.body);
    } catch {
      body = null;
    }
  }
  return { status: response.statusCode, headers: response.headers, body, text: response.body };
}

let counter = 0;

export interface Person {
  id: string;
  email: string;
  token: string;
}

export async function signUpPerson(w: TestWaybill, name = 'Test Person'): Promise<Person> {
  counter += 1;
  const email = `person${counter}-${Date.now()}@example.test`;
  const password = 'correct horse battery';
  const signup = await call(w, 'POST', '/v1/auth/signup', { body: { email, password, name } });
  if (signup.status !== 201) throw new Error(`signup failed: ${signup.text}`);
  const session = await call(w, 'POST', '/v1/auth/sessions', { body: { email, password } });
  if (session.status !== 201) throw new Error(`sign-in failed: ${session.text}`);
  return { id: signup.body.id, email, token: session.body.token };
}

export interface CompanyFixture {
  owner: Person;
  tenantId: string;
  /** A live API token with every scope. */
  liveToken: string;
  /** A test API token with every scope. */
  testToken: string;
}

export const ALL_SCOPES = ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'];

export async function createApiToken(
  w: TestWaybill,
  person: Person,
  tenantId: string,
  body: { mode: 'live' | 'test'; scopes?: string[]; customer_account_id?: string; name?: string },
): Promise<string> {
  const response = await call(w, 'POST', `/v1/companies/${tenantId}/api-tokens`, {
    token: person.token,
    body: { name: body.name ?? 'test token', scopes: ALL_SCOPES, ...body },
  });
  if (response.status !== 201) throw new Error(`token failed: ${response.text}`);
  return response.body.token;
}

/** An owner with a company and live and test API tokens holding every scope. */
export async function createCompany(w: TestWaybill, name = 'Test Company'): Promise<CompanyFixture> {
  const owner = await signUpPerson(w, 'Owner');
  const company = await call(w, 'POST', '/v1/companies', { token: owner.token, body: { name } });
  if (company.status !== 201) throw new Error(`company failed: ${company.text}`);
  const tenantId: string = company.body.id;
  return {
    owner,
    tenantId,
    liveToken: await createApiToken(w, owner, tenantId, { mode: 'live' }),
    testToken: await createApiToken(w, owner, tenantId, { mode: 'test' }),
  };
}

export async function createShipment(
  w: TestWaybill,
  token: string,
  body: Record<string, unknown> = {},
): Promise<Json> {
  const response = await call(w, 'POST', '/v1/shipments', {
    token,
    body: { recipient_name: 'Ada Lovelace', currency: 'EUR', ...body },
  });
  if (response.status !== 201) throw new Error(`shipment failed: ${response.text}`);
  return response.body;
}

import { sql } from 'kysely';
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

/**
 * A person signed up and signed in through the API; verified (through the link of the e-mail sign-up
 * sent, as the person would) unless told otherwise.
 */
export async function signUpPerson(
  w: TestWaybill,
  name = 'Test Person',
  options: { verified?: boolean } = {},
): Promise<Person> {
  counter += 1;
  const email = `person${counter}-${Date.now()}@example.test`;
  return signUpWithEmail(w, email, name, options);
}

export async function signUpWithEmail(
  w: TestWaybill,
  email: string,
  name = 'Test Person',
  options: { verified?: boolean } = {},
): Promise<Person> {
  const password = 'correct horse battery';
  const signup = await call(w, 'POST', '/v1/auth/signup', { body: { email, password, name } });
  if (signup.status !== 201) throw new Error(`signup failed: ${signup.text}`);
  if (options.verified ?? true) await verifyEmailAddress(w, email);
  const session = await call(w, 'POST', '/v1/auth/sessions', { body: { email, password } });
  if (session.status !== 201) throw new Error(`sign-in failed: ${session.text}`);
  return { id: signup.body.id, email, token: session.body.token };
}

/** The newest verification link mailed to the address (the outbox: tests run without SMTP). */
export async function verificationLink(w: TestWaybill, email: string): Promise<string> {
  const mail = await w.ctx.db
    .selectFrom('mail_outbox')
    .select('body')
    .where(sql<boolean>`recipients @> jsonb_build_array(${email.trim().toLowerCase()}::text)`)
    .where('subject', 'like', 'Confirm your e-mail address%')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  const link = mail ? /https?:\/\/\S+\/verify-email\?token=\S+/.exec(mail.body)?.[0] : undefined;
  if (!link) throw new Error(`no verification link was mailed to ${email}`);
  return link;
}

/** Opens the mailed link and presses its button, as the person would in a browser. */
export async function verifyEmailAddress(w: TestWaybill, email: string): Promise<void> {
  const link = new URL(await verificationLink(w, email));
  const page = await w.app.inject({ method: 'GET', url: `${link.pathname}${link.search}` });
  if (page.statusCode !== 200) throw new Error(`verification page failed: ${page.statusCode}`);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
  const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const confirmed = await w.app.inject({
    method: 'POST',
    url: '/verify-email',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    payload: new URLSearchParams({ _csrf: csrf, token: link.searchParams.get('token') ?? '' }).toString(),
  });
  if (confirmed.statusCode !== 200) throw new Error(`verification failed: ${confirmed.statusCode}`);
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

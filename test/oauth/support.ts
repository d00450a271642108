import * as oauth from 'oauth4webapi';
import { hashSecret, newId, newSecret } from '../../src/lib/ids.ts';
import { type Person, signUpPerson } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';

export const PASSWORD = 'correct horse battery';
export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export interface TestApp {
  clientId: string;
  clientSecret: string | null;
  redirectUri: string;
  kind: 'confidential' | 'public';
}

/** Registers an app straight in the table (the developer API is the apps module's; tested there). */
export async function registerApp(
  w: TestWaybill,
  options: {
    kind?: 'confidential' | 'public';
    scopes?: string[];
    redirectUris?: string[];
    developer?: Person;
    name?: string;
  } = {},
): Promise<TestApp> {
  const developer = options.developer ?? (await signUpPerson(w, 'Developer'));
  const kind = options.kind ?? 'confidential';
  const secret = kind === 'confidential' ? newSecret('aps_') : null;
  const redirectUris = options.redirectUris ?? ['http://127.0.0.1:8765/callback'];
  const now = w.clock.now();
  const id = newId('app');
  await w.ctx.db
    .insertInto('apps')
    .values({
      id,
      developer_id: developer.id,
      name: options.name ?? 'Parcel Pal',
      description: 'Prints labels & <b>syncs</b> shipments',
      homepage_url: 'https://parcelpal.example/',
      privacy_url: 'https://parcelpal.example/privacy',
      support_url: 'https://parcelpal.example/support',
      redirect_uris: JSON.stringify(redirectUris),
      scopes: JSON.stringify(options.scopes ?? ['shipments:read', 'shipments:write', 'webhooks:write']),
      kind,
      client_secret_hash: secret ? hashSecret(secret) : null,
      events_url: null,
      events_secret_sealed: w.ctx.secrets.seal('whsec_test'),
      events_previous_secret_sealed: null,
      events_previous_secret_expires_at: null,
      status: 'private',
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { clientId: id, clientSecret: secret, redirectUri: redirectUris[0] as string, kind };
}

export async function setAppStatus(w: TestWaybill, appId: string, status: 'private' | 'suspended') {
  await w.ctx.db.updateTable('apps').set({ status }).where('id', '=', appId).execute();
}

/** A browser without a browser: cookies kept by name, redirects never followed. */
export class CookieJar {
  readonly base: string;
  #cookies = new Map<string, string>();

  constructor(base: string) {
    this.base = base;
  }

  set(name: string, value: string): void {
    this.#cookies.set(name, value);
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.#cookies.size > 0) {
      headers.set('cookie', [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    }
    const response = await fetch(new URL(path, this.base), { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair?.indexOf('=') ?? -1;
      if (pair && eq > 0) this.#cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return response;
  }

  /** A form as a browser posts it: a list (ticked checkboxes) as the field repeated. */
  async postForm(path: string, form: Record<string, string | string[]>): Promise<Response> {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(form))
      for (const one of Array.isArray(value) ? value : [value]) body.append(name, one);
    return this.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
    });
  }
}

export function csrfOf(page: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!match?.[1]) throw new Error('no CSRF field on the page');
  return match[1];
}

/** The hidden fields and ticked checkboxes of a form, as the browser would send them. */
export function formFields(page: string): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = {};
  for (const match of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1] as string] = decodeEntities(match[2] as string);
  }
  for (const match of page.matchAll(/<input type="checkbox" name="([^"]+)" value="([^"]*)" checked>/g)) {
    const name = match[1] as string;
    fields[name] = [...((fields[name] as string[] | undefined) ?? []), decodeEntities(match[2] as string)];
  }
  return fields;
}

/** The scopes the consent page offers as checkboxes, ticked or not. */
export function scopeChoices(page: string): string[] {
  return [...page.matchAll(/<input type="checkbox" name="grant_scope" value="([^"]+)"/g)].map(
    (m) => m[1] as string,
  );
}

export function accountChoices(page: string): string[] {
  return [...page.matchAll(/name="account" value="([^"]+)"/g)].map((m) => m[1] as string);
}

function decodeEntities(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/**
 * A jar holding the person's session cookie. The session comes from the API (the sign-in page is
 * limited to 10 a minute per address, and one test walks through it for real).
 */
export async function signedInJar(w: TestWaybill, person: Person): Promise<CookieJar> {
  const jar = new CookieJar(w.url);
  jar.set('waybill_session', person.token);
  return jar;
}

export interface PkceRequest {
  verifier: string;
  state: string;
  query: URLSearchParams;
}

/** An authorization request as a real client builds it. */
export async function authorizationRequest(
  app: TestApp,
  overrides: Record<string, string | null> = {},
): Promise<PkceRequest> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: app.clientId,
    redirect_uri: app.redirectUri,
    scope: 'shipments:read shipments:write',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  for (const [name, value] of Object.entries(overrides)) {
    if (value === null) query.delete(name);
    else query.set(name, value);
  }
  return { verifier, state, query };
}

/** Opens the consent page and answers it; returns the 303's Location. */
export async function consent(
  jar: CookieJar,
  request: PkceRequest,
  options: {
    decision?: 'approve' | 'deny';
    account?: (choices: string[]) => string;
    /** Fields the person sets besides the account (the mode of an agent's grant). */
    fields?: Record<string, string>;
  } = {},
): Promise<URL> {
  const page = await jar.fetch(`/oauth/authorize?${request.query}`);
  const text = await page.text();
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}: ${text.slice(0, 300)}`);
  const choices = accountChoices(text);
  const response = await jar.postForm('/oauth/authorize', {
    ...formFields(text),
    account: options.account ? options.account(choices) : (choices[0] as string),
    decision: options.decision ?? 'approve',
    ...options.fields,
  });
  if (response.status !== 303)
    throw new Error(`consent answered ${response.status}: ${await response.text()}`);
  return new URL(response.headers.get('location') as string);
}

export async function discover(w: TestWaybill): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(w.url);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure });
  return oauth.processDiscoveryResponse(issuer, response);
}

export function clientAuthOf(app: TestApp, method: 'basic' | 'post' = 'basic'): oauth.ClientAuth {
  if (!app.clientSecret) return oauth.None();
  return method === 'basic'
    ? oauth.ClientSecretBasic(app.clientSecret)
    : oauth.ClientSecretPost(app.clientSecret);
}

/** Sign in, consent, and exchange the code: the whole flow, for tests that need tokens. */
export async function obtainTokens(
  w: TestWaybill,
  as: oauth.AuthorizationServer,
  app: TestApp,
  person: Person,
  options: {
    scope?: string;
    account?: (choices: string[]) => string;
    /** More of the authorization request (`resource`), and the consent form's fields (`mode`). */
    authorize?: Record<string, string | null>;
    fields?: Record<string, string>;
  } = {},
): Promise<oauth.TokenEndpointResponse> {
  const jar = await signedInJar(w, person);
  const request = await authorizationRequest(app, {
    ...(options.scope ? { scope: options.scope } : {}),
    ...options.authorize,
  });
  const location = await consent(jar, request, {
    ...(options.account ? { account: options.account } : {}),
    ...(options.fields ? { fields: options.fields } : {}),
  });
  return exchangeCode(as, app, location, request);
}

/** The code the consent sent back to the app, exchanged as oauth4webapi does it. */
export async function exchangeCode(
  as: oauth.AuthorizationServer,
  app: TestApp,
  location: URL,
  request: PkceRequest,
): Promise<oauth.TokenEndpointResponse> {
  const client = { client_id: app.clientId };
  const params = oauth.validateAuthResponse(as, client, location, request.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    clientAuthOf(app),
    params,
    app.redirectUri,
    request.verifier,
    insecure,
  );
  return oauth.processAuthorizationCodeResponse(as, client, response);
}

/** A raw form POST to the token or revoke endpoint, for the rows oauth4webapi would never send. */
export async function postForm(
  w: TestWaybill,
  path: '/oauth/token' | '/oauth/revoke',
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${w.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, body, text };
}

export function basic(id: string, secret: string): string {
  const enc = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

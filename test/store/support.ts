import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { call, type Json, type Person, signUpPerson, signUpWithEmail } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';
import { checkReceived } from '../support/message-check.ts';

export const PASSWORD = 'correct horse battery';
export const REVIEWERS = ['reviewer@example.test', 'second-reviewer@example.test'];

/** Harness options with two reviewers (a reviewer's e-mail can sign up once per Waybill). */
export const reviewerEnv = { env: { WAYBILL_REVIEWER_EMAILS: REVIEWERS.join(',') } };

/** A person with this e-mail, verified through the mailed link unless told otherwise. */
export async function signUpAs(
  w: TestWaybill,
  email: string,
  name = 'Someone',
  options: { verified?: boolean } = {},
): Promise<Person> {
  return signUpWithEmail(w, email, name, options);
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/** A real events receiver on 127.0.0.1: answers what `decide` says and records every message. */
export async function startEventsReceiver(
  decide: (message: Omit<Received, 'status'>) => number,
  answer?: (status: number) => string | Buffer,
) {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const message = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      checkReceived(message, 'the events URL');
      const status = decide(message);
      received.push({ ...message, status });
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end(answer ? answer(status) : status < 300 ? 'thanks' : 'refused');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/waybill-events`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The receiver a careful developer writes: verifies every message with the standardwebhooks
 * package against the app's events secret, at the harness clock's time (the messages' timestamps
 * follow the injected clock), and answers 401 when the signature does not hold.
 */
export function verifyingReceiver(w: TestWaybill, secret: () => string) {
  return startEventsReceiver((message) => {
    const headers: Record<string, string> = {};
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      headers[name] = String(message.headers[name] ?? '');
    }
    const realNow = Date.now;
    Date.now = () => w.clock.now().getTime();
    try {
      new Webhook(secret()).verify(message.body, headers);
      return 200;
    } catch {
      return 401;
    } finally {
      Date.now = realNow;
    }
  });
}

/** An app ready for the store: privacy, support and events URLs set. */
export function publishableApp(eventsUrl: string, overrides: Record<string, unknown> = {}) {
  return {
    name: 'Route Planner',
    description: 'Plans delivery routes from your Waybill shipments',
    homepage_url: 'https://route-planner.example',
    privacy_url: 'https://route-planner.example/privacy',
    support_url: 'https://route-planner.example/support',
    redirect_uris: ['https://route-planner.example/callback'],
    scopes: ['shipments:read', 'webhooks:write'],
    kind: 'confidential',
    events_url: eventsUrl,
    ...overrides,
  };
}

export const JUSTIFICATIONS: Record<string, string> = {
  'shipments:read': 'Reads your shipments to plan the day’s delivery routes.',
  'shipments:write': 'Marks shipments out for delivery when a route starts.',
  'webhooks:read': 'Shows which webhook endpoints the planner created for you.',
  'webhooks:write': 'Creates an endpoint so that routes update as shipments move.',
};

export function listing(scopes: string[], overrides: Record<string, unknown> = {}) {
  return {
    tagline: 'Delivery routes in one click',
    description_en: 'Route Planner turns the day’s shipments into optimised delivery routes.',
    description_es: 'Route Planner convierte los envíos del día en rutas de reparto optimizadas.',
    category: 'shipping',
    app_url: 'https://route-planner.example/start',
    scope_justifications: scopes.map((scope) => ({ scope, justification: JUSTIFICATIONS[scope] ?? '' })),
    ...overrides,
  };
}

let keys = 0;
export function newKey(): string {
  keys += 1;
  return `submission-${keys}-${Date.now()}`;
}

export async function submit(
  w: TestWaybill,
  developer: Person,
  appId: string,
  body: Record<string, unknown>,
  key: string | null = newKey(),
) {
  return call(w, 'POST', `/v1/developer/apps/${appId}/submissions`, {
    token: developer.token,
    body,
    headers: key ? { 'idempotency-key': key } : {},
  });
}

export async function registerPublishable(
  w: TestWaybill,
  developer: Person,
  eventsUrl: string,
  overrides: Record<string, unknown> = {},
): Promise<Json> {
  const response = await call(w, 'POST', '/v1/developer/apps', {
    token: developer.token,
    body: publishableApp(eventsUrl, overrides),
  });
  if (response.status !== 201) throw new Error(`app failed: ${response.text}`);
  return response.body;
}

/** Submits, starts and decides: the whole way to a decision, asserting each step. */
export async function submitAndDecide(
  w: TestWaybill,
  developer: Person,
  reviewer: Person,
  appId: string,
  body: Record<string, unknown>,
  decision: 'approved' | 'rejected' | 'changes_requested',
  note = 'Looked at everything listed.',
): Promise<Json> {
  const submitted = await submit(w, developer, appId, body);
  if (submitted.status !== 201) throw new Error(`submission failed: ${submitted.text}`);
  const started = await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/start`, {
    token: reviewer.token,
  });
  if (started.status !== 200) throw new Error(`start failed: ${started.text}`);
  const decided = await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/decision`, {
    token: reviewer.token,
    body: { decision, note },
  });
  if (decided.status !== 200) throw new Error(`decision failed: ${decided.text}`);
  return decided.body;
}

/** A person who owns a company of that name (no API tokens: the store needs none). */
export async function ownerOfCompany(
  w: TestWaybill,
  name: string,
): Promise<{ owner: Person; tenantId: string }> {
  const owner = await signUpPerson(w, `${name} Owner`);
  const created = await call(w, 'POST', '/v1/companies', { token: owner.token, body: { name } });
  if (created.status !== 201) throw new Error(`company failed: ${created.text}`);
  return { owner, tenantId: created.body.id as string };
}

/** A new session: sessions last 14 days, and store tests move the clock by weeks. */
export async function signInAgain(w: TestWaybill, person: Person): Promise<Person> {
  const session = await call(w, 'POST', '/v1/auth/sessions', {
    body: { email: person.email, password: PASSWORD },
  });
  if (session.status !== 201) throw new Error(`sign-in failed: ${session.text}`);
  return { ...person, token: session.body.token };
}

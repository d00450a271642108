import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerBearerAuth } from '../../src/http/auth.ts';
import { install, issueAppTokens, registerApp } from '../apps/fixtures.ts';
import { type CompanyFixture, call, createApiToken, createCompany, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { expectProblem } from './expect.ts';

/**
 * The shared security test: every /v1 operation of the OpenAPI document, without a token, with an
 * unknown one, and with the wrong kind of token, answers 401 or 403 before anything about its
 * input is checked. Each request carries input that would fail validation (an empty body, ids of
 * the wrong shape, a limit out of range): a 400 would mean validation ran first.
 */

let w: TestWaybill;
let company: CompanyFixture;
let doc: Json;
const tokens: Record<string, string> = {};

interface Operation {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  id: string;
  security: Array<Record<string, string[]>>;
  hasBody: boolean;
  hasQuery: boolean;
}

function operations(): Operation[] {
  const found: Operation[] = [];
  for (const [path, methods] of Object.entries<Json>(doc.paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, operation] of Object.entries<Json>(methods)) {
      found.push({
        method: method.toUpperCase() as Operation['method'],
        path,
        id: operation.operationId,
        security: operation.security,
        hasBody: operation.requestBody !== undefined,
        hasQuery: (operation.parameters ?? []).some((p: Json) => p.in === 'query'),
      });
    }
  }
  return found;
}

/** A request that validation would refuse: ids of no known shape, an empty body, limit=0. */
function badInput(op: Operation) {
  const url = op.path.replace(/\{[^}]+\}/g, '%20not-an-id%20') + (op.hasQuery ? '?limit=0&surprise=1' : '');
  const body = ['POST', 'PATCH', 'PUT'].includes(op.method) ? {} : undefined;
  return { url, body };
}

beforeAll(async () => {
  w = await startWaybill();
  company = await createCompany(w);
  const owner = company.owner;
  const app = await registerApp(w, owner);
  const installation = await install(w, { appId: app.id, tenantId: company.tenantId, userId: owner.id });
  tokens.session = owner.token;
  tokens.api = company.liveToken;
  tokens.app = (
    await issueAppTokens(w, { appId: app.id, installationId: installation.id, userId: owner.id })
  ).accessToken;
  // A token lacking each scope: one holding only shipments:read, one holding only webhooks:read.
  tokens.shipmentsReadOnly = await createApiToken(w, owner, company.tenantId, {
    mode: 'live',
    scopes: ['shipments:read'],
  });
  tokens.webhooksReadOnly = await createApiToken(w, owner, company.tenantId, {
    mode: 'live',
    scopes: ['webhooks:read'],
  });
  doc = (await call(w, 'GET', '/openapi.json')).body;
});
afterAll(async () => {
  await w?.close();
});

describe('every /v1 operation authenticates and authorises before it validates', () => {
  it('the document lists them all, each with an operationId and a security requirement', () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThanOrEqual(44);
    for (const op of ops) {
      expect(op.id, `${op.method} ${op.path}`).toMatch(/^[a-z][A-Za-z]+$/);
      expect(Array.isArray(op.security), `${op.method} ${op.path}`).toBe(true);
    }
    expect(new Set(ops.map((op) => op.id)).size).toBe(ops.length);
    // Public: signing up, signing in, the store's fixed category list and its listing images (an
    // <img> sends no Authorization; an image not yet approved is 404 to anyone but its developer
    // and reviewers: test/store/media.test.ts), nothing else.
    expect(ops.filter((op) => op.security.length === 0).map((op) => op.id)).toEqual([
      'postAuthSignup',
      'postAuthSessions',
      'getStoreAppsByIdMediaByName',
      'getStoreCategories',
    ]);
  });

  it('without a token, or with an unknown one: 401 auth.invalid_token', async () => {
    for (const op of operations().filter((o) => o.security.length > 0)) {
      const { url, body } = badInput(op);
      for (const token of [undefined, 'sk_live_0000000000000000000000000000000000000000000', 'ust_nope']) {
        const response = await call(w, op.method, url, { token, body });
        expectProblem(response, 401, 'auth.invalid_token');
        // RFC 6750 section 3.1: with a token sent, the challenge says invalid_token.
        expect(response.headers['www-authenticate'], `${op.method} ${op.path}`).toBe(
          token ? 'Bearer realm="waybill", error="invalid_token"' : 'Bearer realm="waybill"',
        );
      }
    }
  });

  it('session operations refuse API and app tokens: 403 auth.session_required', async () => {
    const sessionOps = operations().filter((o) => o.security[0]?.session !== undefined);
    expect(sessionOps.length).toBeGreaterThan(20);
    for (const op of sessionOps) {
      const { url, body } = badInput(op);
      for (const token of [tokens.api, tokens.app]) {
        const response = await call(w, op.method, url, { token, body });
        expectProblem(response, 403, 'auth.session_required');
      }
    }
  });

  it('token operations refuse session tokens and tokens without their scope: 403 auth.insufficient_scope', async () => {
    const tokenOps = operations().filter((o) => o.security[0]?.token !== undefined);
    expect(tokenOps.length).toBeGreaterThan(15);
    for (const op of tokenOps) {
      const scope = op.security[0]?.token?.[0];
      expect(scope, `${op.method} ${op.path}`).toMatch(/^(shipments|webhooks):(read|write)$/);
      const lacking = scope?.startsWith('shipments:')
        ? scope === 'shipments:write'
          ? tokens.shipmentsReadOnly
          : tokens.webhooksReadOnly
        : scope === 'webhooks:write'
          ? tokens.webhooksReadOnly
          : tokens.shipmentsReadOnly;
      const { url, body } = badInput(op);
      for (const token of [tokens.session, lacking]) {
        const response = await call(w, op.method, url, { token, body });
        expectProblem(response, 403, 'auth.insufficient_scope');
      }
      // RFC 6750 section 3.1: the missing scope is named in the challenge.
      const missing = await call(w, op.method, url, { token: lacking, body });
      expect(missing.headers['www-authenticate'], `${op.method} ${op.path}`).toBe(
        `Bearer realm="waybill", error="insufficient_scope", scope="${scope}"`,
      );
    }
  });

  it('public operations that take input validate it without a token', async () => {
    const publicOps = operations().filter((o) => o.security.length === 0);
    for (const op of publicOps.filter((o) => o.hasBody)) {
      expectProblem(await call(w, op.method, op.path, { body: {} }), 400, 'validation.failed');
    }
    // The category list takes no input: it answers anyone.
    expect((await call(w, 'GET', '/v1/store/categories')).status).toBe(200);
  });

  it('the right token reaches validation', async () => {
    const response = await call(w, 'POST', '/v1/developer/apps', { token: tokens.session, body: {} });
    expectProblem(response, 400, 'validation.failed');
    const shipment = await call(w, 'POST', '/v1/shipments', { token: tokens.api, body: {} });
    expectProblem(shipment, 400, 'validation.failed');
  });
});

describe('by construction', () => {
  it('a /v1 route that does not declare who may call it cannot be registered', async () => {
    const app = Fastify();
    registerBearerAuth(app, w.ctx);
    expect(() => app.get('/v1/forgotten', async () => ({}))).toThrow(/declares no config.auth/);
    expect(() => app.get('/v1/declared', { config: { auth: 'session' } }, async () => ({}))).not.toThrow();
    await app.close();
  });
});

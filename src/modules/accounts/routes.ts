import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { emailVerificationRateLimit, signInRateLimit, signUpRateLimit } from '../../http/rate-limits.ts';
import { errorResponses, Id, Page, PageQuery } from '../../http/schemas.ts';
import { requireUser } from './access.ts';
import { createApiToken, listApiTokens, revokeApiToken } from './api-tokens.ts';
import {
  addMember,
  createCompany,
  createCustomerAccount,
  getCompany,
  goLive,
  listCustomerAccounts,
  listMembers,
  membershipOf,
  membershipsOfPerson,
  removeMember,
} from './companies.ts';
import { resendVerificationLink } from './email-verification.ts';
import {
  ApiTokenSchema,
  CompanySchema,
  CustomerAccountSchema,
  Email,
  MembershipSchema,
  MembershipSummarySchema,
  PersonSchema,
  RoleName,
  ScopeName,
  TenantParams,
} from './schemas.ts';
import { getPerson, signIn, signOut, signUp } from './users.ts';

const tags = ['People and companies'];
const strict = { additionalProperties: false } as const;

export function accountsRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/auth/signup',
      {
        schema: {
          tags,
          summary: 'Sign up a person',
          body: Type.Object(
            {
              email: Email,
              password: Type.String({ minLength: 10, maxLength: 200 }),
              name: Type.String({ minLength: 1, maxLength: 200 }),
            },
            strict,
          ),
          response: { 201: PersonSchema, ...errorResponses(400, 409) },
        },
        config: { auth: 'public', rateLimit: signUpRateLimit },
      },
      async (request, reply) => reply.code(201).send(await signUp(ctx, request.body)),
    );

    app.post(
      '/v1/auth/sessions',
      {
        schema: {
          tags,
          summary: 'Sign in: a session token for the API',
          body: Type.Object(
            { email: Type.String({ maxLength: 254 }), password: Type.String({ maxLength: 200 }) },
            strict,
          ),
          response: {
            201: Type.Object({ token: Type.String(), expires_at: Type.String(), user: PersonSchema }),
            ...errorResponses(400, 401, 429),
          },
        },
        config: { auth: 'public', rateLimit: signInRateLimit(ctx.config) },
      },
      async (request, reply) =>
        reply.code(201).send((await signIn(ctx, request.body, { address: request.ip })).session),
    );

    app.post(
      '/v1/auth/email-verification',
      {
        config: { auth: 'session', rateLimit: emailVerificationRateLimit },
        schema: {
          tags,
          summary: 'Send a new link that verifies your e-mail address (one a minute, five an hour)',
          response: {
            202: Type.Object({ email: Type.String(), expires_at: Type.String() }),
            ...errorResponses(401, 403, 409, 429),
          },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await resendVerificationLink(ctx, requireUser(request.principal).userId)),
    );

    app.delete(
      '/v1/auth/sessions/current',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Sign out',
          response: { 204: Type.Null(), ...errorResponses(401, 403) },
        },
      },
      async (request, reply) => {
        await signOut(ctx, requireUser(request.principal).sessionId);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/me',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'The signed-in person and their memberships',
          response: {
            200: Type.Object({
              ...PersonSchema.properties,
              memberships: Type.Array(MembershipSummarySchema),
            }),
            ...errorResponses(401, 403),
          },
        },
      },
      async (request) => {
        const { userId } = requireUser(request.principal);
        return { ...(await getPerson(ctx, userId)), memberships: await membershipsOfPerson(ctx, userId) };
      },
    );

    app.post(
      '/v1/companies',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Create a company; the creator is its owner',
          body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }, strict),
          response: { 201: CompanySchema, ...errorResponses(400, 401, 403) },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await createCompany(ctx, requireUser(request.principal).userId, request.body)),
    );

    app.get(
      '/v1/companies/:tenant_id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'A company you belong to',
          params: TenantParams,
          response: { 200: CompanySchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => {
        await membershipOf(ctx, requireUser(request.principal).userId, request.params.tenant_id);
        return getCompany(ctx, request.params.tenant_id);
      },
    );

    app.post(
      '/v1/companies/:tenant_id/go-live',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Take the company live (owner)',
          params: TenantParams,
          response: { 200: CompanySchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => goLive(ctx, requireUser(request.principal).userId, request.params.tenant_id),
    );

    app.get(
      '/v1/companies/:tenant_id/members',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Members of the company',
          params: TenantParams,
          querystring: PageQuery,
          response: { 200: Page(MembershipSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listMembers(ctx, requireUser(request.principal).userId, request.params.tenant_id, request.query),
    );

    app.post(
      '/v1/companies/:tenant_id/members',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Add a person who has signed up (owner or admin)',
          params: TenantParams,
          body: Type.Object(
            {
              email: Email,
              role: RoleName,
              customer_account_id: Type.Optional(Type.Union([Id(64), Type.Null()])),
            },
            strict,
          ),
          response: { 201: MembershipSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(
            await addMember(
              ctx,
              requireUser(request.principal).userId,
              request.params.tenant_id,
              request.body,
            ),
          ),
    );

    app.delete(
      '/v1/companies/:tenant_id/members/:user_id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'The person leaves the company; their app tokens stop working',
          params: Type.Object({ tenant_id: Id(64), user_id: Id(64) }, strict),
          response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request, reply) => {
        await removeMember(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.params.user_id,
        );
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/companies/:tenant_id/customer-accounts',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Merchant accounts of the company',
          params: TenantParams,
          querystring: PageQuery,
          response: { 200: Page(CustomerAccountSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listCustomerAccounts(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.query,
        ),
    );

    app.post(
      '/v1/companies/:tenant_id/customer-accounts',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Create a merchant account (owner or admin)',
          params: TenantParams,
          body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }, strict),
          response: { 201: CustomerAccountSchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(
            await createCustomerAccount(
              ctx,
              requireUser(request.principal).userId,
              request.params.tenant_id,
              request.body,
            ),
          ),
    );

    app.get(
      '/v1/companies/:tenant_id/api-tokens',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'API tokens of the company (secrets are never shown again)',
          params: TenantParams,
          querystring: PageQuery,
          response: { 200: Page(ApiTokenSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listApiTokens(ctx, requireUser(request.principal).userId, request.params.tenant_id, request.query),
    );

    app.post(
      '/v1/companies/:tenant_id/api-tokens',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Create an API token, live or test; the secret is shown once',
          params: TenantParams,
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 200 }),
              mode: Type.Union([Type.Literal('live'), Type.Literal('test')]),
              audience: Type.Optional(
                Type.Union([Type.Literal('v1'), Type.Literal('mcp')], {
                  description: 'Where the token works: the API (default) or only the MCP server',
                }),
              ),
              scopes: Type.Array(ScopeName, { minItems: 1, maxItems: 10 }),
              customer_account_id: Type.Optional(Type.Union([Id(64), Type.Null()])),
            },
            strict,
          ),
          response: { 201: ApiTokenSchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(
            await createApiToken(
              ctx,
              requireUser(request.principal).userId,
              request.params.tenant_id,
              request.body,
            ),
          ),
    );

    app.delete(
      '/v1/companies/:tenant_id/api-tokens/:tok_id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Revoke an API token',
          params: Type.Object({ tenant_id: Id(64), tok_id: Id(64) }, strict),
          response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) => {
        await revokeApiToken(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.params.tok_id,
        );
        return reply.code(204).send(null);
      },
    );
  };
}

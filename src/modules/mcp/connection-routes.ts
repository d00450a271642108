import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Page, PageQuery } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import { getCompany } from '../accounts/companies.ts';
import { CompanySchema } from '../accounts/schemas.ts';
import { listAgentConnections, revokeAgentConnection, setAgentAccess } from './connections.ts';

const tags = ['Agents'];
const TenantParams = Type.Object({ tenant_id: Id(64) }, { additionalProperties: false });
const ConnectionParams = Type.Object({ tenant_id: Id(64), id: Id(64) }, { additionalProperties: false });

export const AgentConnectionSchema = Type.Object(
  {
    id: Type.String({ description: 'agc_... (an approved client) or tok_... (an API token for agents)' }),
    kind: Type.Union([Type.Literal('oauth'), Type.Literal('api_token')], {
      description: '`oauth`: a client the person approved; `api_token`: an API token with audience `mcp`',
    }),
    client_id: Type.Union([Type.String(), Type.Null()], { description: 'null for an API token' }),
    client_name: Type.String(),
    client_host: Type.Union([Type.String(), Type.Null()], {
      description:
        "The metadata document's host, or the host a registered client returns to (never its client_uri)",
    }),
    self_described: Type.Boolean({
      description: 'A registered client: its name and URIs are its own claims, checked by no one',
    }),
    mode: Type.Union([Type.Literal('test'), Type.Literal('live')]),
    scopes: Type.Array(Type.String()),
    customer_account_id: Type.Union([Type.String(), Type.Null()]),
    approved_by: Type.String({ description: 'The person who approved (usr_)' }),
    created_at: Type.String({ format: 'date-time' }),
    last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { additionalProperties: false },
);

/** Agent connections and the company's agent access (CONTRACT.md, Agents); person's session token. */
export function agentConnectionRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/companies/:tenant_id/agent-connections',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'AI agents connected to the company through /mcp',
          params: TenantParams,
          querystring: PageQuery,
          response: { 200: Page(AgentConnectionSchema), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) =>
        listAgentConnections(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.query,
        ),
    );

    app.delete(
      '/v1/companies/:tenant_id/agent-connections/:id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Revoke an agent connection: every token of it stops at once',
          params: ConnectionParams,
          response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) => {
        const userId = requireUser(request.principal).userId;
        await revokeAgentConnection(ctx, userId, request.params.tenant_id, request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.patch(
      '/v1/companies/:tenant_id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: "Change the company's agent access (owners and admins)",
          params: TenantParams,
          body: Type.Object(
            {
              agent_access: Type.Object(
                { test: Type.Optional(Type.Boolean()), live: Type.Optional(Type.Boolean()) },
                { additionalProperties: false },
              ),
            },
            { additionalProperties: false },
          ),
          response: { 200: CompanySchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => {
        const userId = requireUser(request.principal).userId;
        await setAgentAccess(ctx, userId, request.params.tenant_id, request.body.agent_access);
        return getCompany(ctx, request.params.tenant_id);
      },
    );
  };
}

import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { bearerOf } from '../../http/auth.ts';
import { problemBody, sendProblem } from '../../http/errors.ts';
import { AppError } from '../../lib/errors.ts';
import type { TenantAccess } from '../accounts/access.ts';
import { authenticateBearer } from '../accounts/authenticate.ts';
import { allows, SCOPES, type Scope } from '../accounts/roles.ts';
import { resourceUrl } from '../oauth/resource.ts';
import { agentAccessOf } from './connections.ts';
import { argumentErrors, TOOLS, TOOLS_BY_NAME } from './tools.ts';

const SERVER_INFO = { name: 'waybill', title: 'Waybill', version: '1.0.0' };

/**
 * The MCP SDK (with zod, about 35 MB of memory) is loaded by the first /mcp request, not at start:
 * most processes serve no agent (issue 41 item 4, idle memory).
 */
let sdkLoading: Promise<typeof import('./sdk.ts')> | null = null;
const mcpSdk = () => {
  sdkLoading ??= import('./sdk.ts');
  return sdkLoading;
};

/** RFC 9728 section 3: where the metadata of `{base_url}/mcp` is. */
export function resourceMetadataUrl(ctx: AppContext): string {
  return `${ctx.config.baseUrl}/.well-known/oauth-protected-resource/mcp`;
}

/** RFC 9728 section 2, as CONTRACT.md (Agents) fixes it. */
export function protectedResourceMetadata(ctx: AppContext) {
  return {
    resource: resourceUrl(ctx.config, 'mcp'),
    authorization_servers: [ctx.config.baseUrl],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ['header'],
    resource_name: 'Waybill MCP server',
  };
}

/**
 * RFC 6750 section 3 and RFC 9728 section 5.1: a 401 points at the metadata (with invalid_token when
 * a token was sent), and nothing else is said about the token.
 */
function unauthorized(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, detail: string) {
  const sent = request.headers.authorization !== undefined;
  reply.header(
    'www-authenticate',
    `Bearer ${sent ? 'error="invalid_token", ' : ''}resource_metadata="${resourceMetadataUrl(ctx)}"`,
  );
  return reply
    .code(401)
    .type('application/problem+json')
    .send(problemBody(new AppError('auth.invalid_token', detail), '/mcp'));
}

/** The access of an `/mcp` token, or null: only access tokens issued for `{base_url}/mcp` (no passthrough). */
async function mcpAccess(ctx: AppContext, request: FastifyRequest): Promise<TenantAccess | null> {
  let secret: string | null;
  try {
    secret = bearerOf(request);
  } catch {
    return null;
  }
  if (!secret) return null;
  try {
    const principal = await authenticateBearer(ctx, secret);
    return principal.kind === 'app_token' && principal.resource === 'mcp' ? principal.access : null;
  } catch (error) {
    if (error instanceof AppError && error.code === 'auth.invalid_token') return null;
    throw error;
  }
}

/** The JSON-RPC requests of a POST body (one message, or a batch of older protocol revisions). */
function messagesOf(body: unknown): { method?: unknown; params?: { name?: unknown } }[] {
  const list = Array.isArray(body) ? body : [body];
  return list.filter((m): m is { method?: unknown } => typeof m === 'object' && m !== null);
}

/**
 * The scope a tools/call needs that the token lacks, or null. Checked before the protocol runs, so
 * the answer is an HTTP 403 with the challenge (the MCP authorization specification's step-up).
 */
function missingScopes(access: TenantAccess, body: unknown): Scope[] {
  const missing = new Set<Scope>();
  for (const message of messagesOf(body)) {
    if (message.method !== 'tools/call') continue;
    const tool = TOOLS_BY_NAME.get(String(message.params?.name ?? ''));
    if (tool && !allows(access.scopes, tool.scope)) missing.add(tool.scope);
  }
  return [...missing];
}

/** A refusal the agent reads as a tool result (not a protocol error), with Waybill's code. */
function refusal(error: AppError): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.code}: ${error.message}` }],
    structuredContent: problemBody(error),
  };
}

/** One MCP server for one request (stateless): its tools act with the token's access only. */
function serverFor(
  { Server, ListToolsRequestSchema, CallToolRequestSchema, McpError, ErrorCode }: typeof import('./sdk.ts'),
  ctx: AppContext,
  access: TenantAccess,
): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      'Waybill tracks shipments. Find them with search_shipments, read one with get_shipment, move it with update_shipment_status; list_webhook_deliveries and replay_webhook_delivery help with failed webhooks. The connection sees one company (or merchant account) in one mode.',
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: tool.input as unknown as { type: 'object'; properties?: Record<string, object> },
      annotations: { title: tool.title, ...tool.annotations },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = TOOLS_BY_NAME.get(request.params.name);
    if (!tool)
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name.slice(0, 100)}`);
    const args = request.params.arguments ?? {};
    const errors = argumentErrors(tool, args);
    if (errors.length > 0)
      return refusal(new AppError('validation.failed', 'The arguments are not valid', { errors }));
    try {
      const { result, text } = await tool.run(ctx, access, args as never);
      return { content: [{ type: 'text', text }], structuredContent: result };
    } catch (error) {
      if (error instanceof AppError && error.status < 500) return refusal(error);
      throw error;
    }
  });
  return server;
}

/** Records that an agent connection was used, at most once a minute (the connections list shows it). */
async function touch(ctx: AppContext, access: TenantAccess): Promise<void> {
  if (!access.installationId) return;
  const now = ctx.clock.now();
  await ctx.db
    .updateTable('installations')
    .set({ last_used_at: now })
    .where('id', '=', access.installationId)
    .where((eb) =>
      eb.or([
        eb('last_used_at', 'is', null),
        eb('last_used_at', '<', sql<Date>`${now}::timestamptz - interval '1 minute'`),
      ]),
    )
    .execute();
}

/** Whether the company lets agents use this mode now (CONTRACT.md: `agent_access`). */
async function modeAllowed(ctx: AppContext, access: TenantAccess): Promise<boolean> {
  const row = await ctx.db
    .selectFrom('companies')
    .select('agent_access')
    .where('id', '=', access.tenantId)
    .executeTakeFirst();
  const setting = agentAccessOf(row?.agent_access ?? null);
  return access.livemode ? setting.live : setting.test;
}

/** `POST {base_url}/mcp` (MCP over Streamable HTTP) and its protected resource metadata. */
export function mcpRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const metadata = JSON.stringify(protectedResourceMetadata(ctx));
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      app.get(path, { schema: { hide: true } }, async (_request, reply) =>
        reply
          .type('application/json; charset=utf-8')
          .header('cache-control', 'public, max-age=300')
          .header('access-control-allow-origin', '*')
          .send(metadata),
      );
    }

    const accessOf = new WeakMap<FastifyRequest, TenantAccess>();
    // Authentication comes first, before the body is read (onRequest), as on /v1.
    const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
      const access = await mcpAccess(ctx, request);
      if (!access) {
        return unauthorized(
          ctx,
          request,
          reply,
          `Send an access token issued for ${resourceUrl(ctx.config, 'mcp')}; see ${resourceMetadataUrl(ctx)}`,
        );
      }
      if (!(await modeAllowed(ctx, access))) {
        return sendProblem(
          reply,
          new AppError(
            'mcp.disabled',
            `The company does not let agents use ${access.livemode ? 'live' : 'test'} data now`,
          ),
          request,
        );
      }
      accessOf.set(request, access);
    };

    app.post('/mcp', { schema: { hide: true }, onRequest: authenticate }, async (request, reply) => {
      const access = accessOf.get(request) as TenantAccess;
      const missing = missingScopes(access, request.body);
      if (missing.length > 0) {
        // Every scope the call needs besides those held, so that the new grant loses nothing.
        const wanted = SCOPES.filter((s) => access.scopes.has(s) || missing.includes(s));
        reply.header(
          'www-authenticate',
          `Bearer error="insufficient_scope", scope="${wanted.join(' ')}", resource_metadata="${resourceMetadataUrl(ctx)}"`,
        );
        return sendProblem(
          reply,
          new AppError('auth.insufficient_scope', `This call needs the scope ${missing.join(' ')}`, {
            required_scope: missing.join(' '),
          }),
          request,
        );
      }
      await touch(ctx, access);
      const sdk = await mcpSdk();
      const server = serverFor(sdk, ctx, access);
      // Stateless (any API process answers any request): no session id, one JSON answer per POST.
      const transport = new sdk.StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await transport.handleRequest(request.raw, reply.raw, request.body);
    });

    // No server-initiated stream and no sessions to end: a stateless server says so (405).
    for (const method of ['GET', 'DELETE'] as const) {
      app.route({
        method,
        url: '/mcp',
        schema: { hide: true },
        handler: async (request, reply) =>
          sendProblem(
            reply.header('allow', 'POST'),
            new AppError(
              'request.method_not_allowed',
              'POST MCP messages to this URL; it keeps no stream or session',
            ),
            request,
          ),
      });
    }
  };
}

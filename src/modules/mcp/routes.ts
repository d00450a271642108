import { Readable } from 'node:stream';
import type { AuthInfo, CallToolResult, Server, Tool as ToolDescription } from '@modelcontextprotocol/server';
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

/** What the 401 asks a new client to start with. */
const FIRST_SCOPE: Scope = 'shipments:read';

type Sdk = typeof import('./sdk.ts');

const SERVER_INFO = { name: 'waybill', title: 'Waybill', version: '1.0.0' };

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
  // The least a client needs to start (MCP 2025-11-25, "Scope Selection Strategy": without it a
  // client asks for every scope supported); writes and webhooks step up through the 403 below.
  reply.header(
    'www-authenticate',
    `Bearer ${sent ? 'error="invalid_token", ' : ''}resource_metadata="${resourceMetadataUrl(ctx)}", scope="${FIRST_SCOPE}"`,
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
    // An app's grant for /mcp, or an API token made for agents (audience `mcp`); nothing else.
    return principal.kind !== 'user' && principal.resource === 'mcp' ? principal.access : null;
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

/** tools/list's answer, the same for every token (a tool the token lacks the scope for steps up). */
const TOOL_DESCRIPTIONS: ToolDescription[] = TOOLS.map((tool) => ({
  name: tool.name,
  title: tool.title,
  description: tool.description,
  inputSchema: tool.input as unknown as ToolDescription['inputSchema'],
  annotations: { title: tool.title, ...tool.annotations },
}));

/** One MCP server for one request (stateless): its tools act with the token's access only. */
function serverFor(sdk: Sdk, ctx: AppContext, access: TenantAccess): Server {
  const server = new sdk.Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      'Waybill tracks shipments. Find them with search_shipments, read one with get_shipment, move it with update_shipment_status; list_webhook_deliveries and replay_webhook_delivery help with failed webhooks. The connection sees one company (or merchant account) in one mode.',
  });
  server.setRequestHandler('tools/list', async () => ({ tools: TOOL_DESCRIPTIONS }));
  server.setRequestHandler('tools/call', async (request): Promise<CallToolResult> => {
    const tool = TOOLS_BY_NAME.get(request.params.name);
    if (!tool)
      throw new sdk.ProtocolError(
        sdk.ProtocolErrorCode.InvalidParams,
        `Unknown tool ${request.params.name.slice(0, 100)}`,
      );
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

const MINUTE = 60_000;

/**
 * Whether the company lets agents use this mode now (CONTRACT.md: `agent_access`), read with the
 * connection's last use in one statement; that use is written at most once a minute (the connections
 * list shows it), so most calls only read.
 */
async function admitted(ctx: AppContext, access: TenantAccess): Promise<boolean> {
  const row = await ctx.db
    .selectFrom('companies as c')
    .leftJoin('installations as i', (join) =>
      join.on('i.id', '=', access.installationId ?? '').onRef('i.tenant_id', '=', 'c.id'),
    )
    .select(['c.agent_access', 'i.last_used_at'])
    .where('c.id', '=', access.tenantId)
    .executeTakeFirst();
  const setting = agentAccessOf(row?.agent_access ?? null);
  if (!(access.livemode ? setting.live : setting.test)) return false;
  const now = ctx.clock.now();
  if (access.installationId && !(row?.last_used_at && now.getTime() - row.last_used_at.getTime() < MINUTE)) {
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
  return true;
}

/** The access a request's token gives, as the SDK hands it to the server factory. */
function authInfoOf(access: TenantAccess): AuthInfo {
  return { token: '', clientId: access.installationId ?? '', scopes: [...access.scopes], extra: { access } };
}

/**
 * The MCP revisions, on the SDK's v2 server: 2026-07-28 (a request carries its own envelope, no
 * handshake) through the SDK's per-request handler, built once; the 2025 revisions (initialize, then
 * plain JSON-RPC) through a stateless transport per request that answers JSON, not an SSE stream.
 */
function mcpServing(sdk: Sdk, ctx: AppContext) {
  const factory = ({ authInfo }: { authInfo?: AuthInfo }) => {
    const access = authInfo?.extra?.access as TenantAccess | undefined;
    if (!access) throw new Error('An MCP server is built for an authenticated request only');
    return serverFor(sdk, ctx, access);
  };
  const modern = sdk.createMcpHandler(factory, { legacy: 'reject' });
  const serve = async (request: Request, body: unknown, access: TenantAccess): Promise<Response> => {
    const authInfo = authInfoOf(access);
    if (!(await sdk.isLegacyRequest(request, body)))
      return modern.fetch(request, { authInfo, parsedBody: body });
    const server = serverFor(sdk, ctx, access);
    const transport = new sdk.WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, { authInfo, parsedBody: body });
    } finally {
      void server.close();
    }
  };
  return { serve, close: () => modern.close() };
}

/** The Fetch API request the SDK reads (Fastify has parsed the body already, so it has none). */
function webRequest(ctx: AppContext, request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(`${ctx.config.baseUrl}/mcp`, { method: request.method, headers });
}

async function sendWebResponse(reply: FastifyReply, response: Response) {
  reply.code(response.status);
  for (const [name, value] of response.headers) reply.header(name, value);
  if (!response.body) return reply.send();
  if (response.headers.get('content-type')?.startsWith('text/event-stream'))
    return reply.send(Readable.fromWeb(response.body as never));
  return reply.send(Buffer.from(await response.arrayBuffer()));
}

/** `POST {base_url}/mcp` (MCP over Streamable HTTP) and its protected resource metadata. */
export function mcpRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    // The SDK is loaded, and the handler built, by the first /mcp request (see sdk.ts).
    let serving: Promise<ReturnType<typeof mcpServing>> | null = null;
    const servingNow = () => {
      serving ??= import('./sdk.ts').then((sdk) => mcpServing(sdk, ctx));
      return serving;
    };
    app.addHook('onClose', async () => {
      if (serving) (await serving).close();
    });
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
      if (!(await admitted(ctx, access))) {
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
      const answer = await (await servingNow()).serve(webRequest(ctx, request), request.body, access);
      return sendWebResponse(reply, answer);
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

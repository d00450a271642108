import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Page, PageQuery } from '../../http/schemas.ts';
import { validationError } from '../../lib/errors.ts';
import { requireUser } from '../accounts/access.ts';
import {
  getCompany,
  requireRole,
  STALL_AFTER_HOURS_MAX,
  STALL_AFTER_HOURS_MIN,
  setStallAfterHours,
} from '../accounts/companies.ts';
import { managesMembers } from '../accounts/roles.ts';
import { BrandingBody, CompanySettingsSchema, RecipientNotificationsBody } from '../recipients/schemas.ts';
import {
  applyRecipientSettings,
  prepareRecipientSettings,
  presentRecipientSettings,
} from '../recipients/settings.ts';
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
          summary:
            "Change the company's settings: agent access, the stall threshold, the recipients' branding and notifications (owners and admins)",
          params: TenantParams,
          body: Type.Object(
            {
              agent_access: Type.Optional(
                Type.Object(
                  { test: Type.Optional(Type.Boolean()), live: Type.Optional(Type.Boolean()) },
                  { additionalProperties: false },
                ),
              ),
              branding: Type.Optional(BrandingBody),
              recipient_notifications: Type.Optional(RecipientNotificationsBody),
              // Checked in the handler, so that a value out of bounds is a 422 naming the field.
              stall_after_hours: Type.Optional(
                Type.Number({
                  description: `Whole hours, ${STALL_AFTER_HOURS_MIN} to ${STALL_AFTER_HOURS_MAX}: how long a shipment not final may go without a checkpoint or move before shipment.stalled (default 72)`,
                }),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 200: CompanySettingsSchema, ...errorResponses(400, 401, 403, 404, 422) },
        },
      },
      async (request) => {
        const userId = requireUser(request.principal).userId;
        const tenantId = request.params.tenant_id;
        await requireRole(ctx, userId, tenantId, managesMembers);
        // Every part checked before any is written: a refusal changes nothing.
        const stall = request.body.stall_after_hours;
        if (
          stall !== undefined &&
          (!Number.isInteger(stall) || stall < STALL_AFTER_HOURS_MIN || stall > STALL_AFTER_HOURS_MAX)
        ) {
          throw validationError(
            [
              {
                path: '/stall_after_hours',
                message: `must be a whole number of hours from ${STALL_AFTER_HOURS_MIN} to ${STALL_AFTER_HOURS_MAX}`,
              },
            ],
            'stall_after_hours is out of bounds',
            422,
          );
        }
        const recipients = prepareRecipientSettings(request.body);
        if (request.body.agent_access) await setAgentAccess(ctx, userId, tenantId, request.body.agent_access);
        await applyRecipientSettings(ctx, tenantId, recipients);
        if (stall !== undefined) await setStallAfterHours(ctx, tenantId, stall);
        return {
          ...(await getCompany(ctx, tenantId)),
          ...(await presentRecipientSettings(ctx.db, tenantId)),
        };
      },
    );
  };
}

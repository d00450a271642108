import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Nullable, Page, PageQuery, Timestamp } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import { TenantParams } from '../accounts/schemas.ts';
import { createPrivacyRequest, getPrivacyRequest, listPrivacyRequests } from './service.ts';

const tags = ['Privacy requests'];

const Recipient = Type.Object(
  {
    email: Type.Optional(Nullable(Type.String({ maxLength: 254 }))),
    phone: Type.Optional(Nullable(Type.String({ maxLength: 40 }))),
  },
  { additionalProperties: false },
);

export const PrivacyRequestBody = Type.Object(
  { kind: Type.Union([Type.Literal('data_request'), Type.Literal('redact')]), recipient: Recipient },
  { additionalProperties: false },
);

export const PrivacyRequestSchema = Type.Object({
  id: Type.String({ description: 'prq_...' }),
  tenant_id: Type.String(),
  kind: Type.String(),
  recipient: Type.Object(
    { email: Nullable(Type.String()), phone: Nullable(Type.String()) },
    {
      description:
        "As given, normalised; an erasure's record keeps it only as [redacted] (its 201 answer shows what was given)",
    },
  ),
  status: Type.String({
    description: 'no_apps_to_tell (nobody could see a matching shipment), sending, delivered or failed',
  }),
  shipment_count: Type.Integer({ description: 'Shipments of the company that matched the recipient' }),
  messages: Type.Array(
    Type.Object({
      app_id: Type.String(),
      installation_id: Type.String(),
      delivery_id: Type.String(),
      shipment_count: Type.Integer(),
      status: Type.String({
        description: 'The delivery status: pending, succeeded, failed, cancelled (or expired)',
      }),
    }),
  ),
  created_at: Timestamp,
});

const RequestParams = Type.Object({ tenant_id: Id(64), prq_id: Id(64) }, { additionalProperties: false });

/** Privacy requests of a company (CONTRACT.md; owners and admins, person's session token). */
export function privacyRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/companies/:tenant_id/privacy-requests',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary:
            "File a recipient's data request or erasure: every app that can see their shipments is told",
          params: TenantParams,
          body: PrivacyRequestBody,
          response: { 201: PrivacyRequestSchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(
            await createPrivacyRequest(
              ctx,
              requireUser(request.principal).userId,
              request.params.tenant_id,
              request.body,
            ),
          ),
    );

    app.get(
      '/v1/companies/:tenant_id/privacy-requests',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Privacy requests, newest first, with what each app got',
          params: TenantParams,
          querystring: PageQuery,
          response: { 200: Page(PrivacyRequestSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listPrivacyRequests(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.query,
        ),
    );

    app.get(
      '/v1/companies/:tenant_id/privacy-requests/:prq_id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'One privacy request',
          params: RequestParams,
          response: { 200: PrivacyRequestSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) =>
        getPrivacyRequest(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.params.prq_id,
        ),
    );
  };
}

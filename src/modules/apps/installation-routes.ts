import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Page, PageQuery } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import { TenantParams } from '../accounts/schemas.ts';
import { getInstallation, listInstallations, uninstallAsPerson } from './installations.ts';
import { InstallationParams, InstallationSchema } from './schemas.ts';

const tags = ['Installations'];

/** Installed apps of a company, for the people who manage its integrations (person's session token). */
export function installationRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/companies/:tenant_id/installations',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Installed apps (owner, admin; a merchant admin sees its account only)',
          params: TenantParams,
          querystring: PageQuery,
          response: { 200: Page(InstallationSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listInstallations(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.query,
        ),
    );

    app.get(
      '/v1/companies/:tenant_id/installations/:inst_id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'One installed app',
          params: InstallationParams,
          response: { 200: InstallationSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) =>
        getInstallation(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.params.inst_id,
        ),
    );

    app.delete(
      '/v1/companies/:tenant_id/installations/:inst_id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Uninstall the app: its tokens end and its webhook endpoints are deleted',
          params: InstallationParams,
          response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) => {
        await uninstallAsPerson(
          ctx,
          requireUser(request.principal).userId,
          request.params.tenant_id,
          request.params.inst_id,
        );
        return reply.code(204).send(null);
      },
    );
  };
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../../context.ts';
import { errorResponses } from '../../../http/schemas.ts';
import { requireUser } from '../../accounts/access.ts';
import { AppParams, AppSchema } from '../../apps/schemas.ts';
import { unpublishApp } from './service.ts';

const tags = ['Developer'];

/** Taking an app off the store (CONTRACT.md "Developer API"); publishing is a reviewer's approval. */
export function publicationRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Authenticate before validating: a caller without a person's token learns nothing about bodies.
    app.addHook('preValidation', async (request) => {
      requireUser(request.principal);
    });

    app.post(
      '/v1/developer/apps/:id/unpublish',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Make the app private: off the store; installations keep working',
          params: AppParams,
          response: { 200: AppSchema, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => unpublishApp(ctx, requireUser(request.principal).userId, request.params.id),
    );
  };
}

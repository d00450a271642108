import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../../context.ts';
import { errorResponses, Page } from '../../../http/schemas.ts';
import { requireUser } from '../../accounts/access.ts';
import { CATEGORIES } from '../listing/categories.ts';
import { getStoreApp, listStoreApps } from './queries.ts';
import {
  CategoriesSchema,
  StoreAppParams,
  StoreAppQuery,
  StoreAppSchema,
  StoreListQuery,
} from './schemas.ts';

const tags = ['App Store'];

/** The App Store for any signed-in person (a person's session token), and its category list. */
export function catalogueRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/store/categories',
      {
        config: { auth: 'public' },
        schema: {
          tags,
          summary: 'The fixed list of App Store categories, with English and Spanish labels',
          // 400: the input guard refuses a query with control characters, as everywhere.
          response: { 200: CategoriesSchema, ...errorResponses(400) },
        },
      },
      async () => ({ data: CATEGORIES.map((c) => ({ id: c.id, en: c.en, es: c.es })) }),
    );

    const signedInRoutes: FastifyPluginAsyncTypebox = async (signedIn) => {
      signedIn.addHook('preValidation', async (request) => {
        requireUser(request.principal);
      });

      signedIn.get(
        '/v1/store/apps',
        {
          config: { auth: 'session' },
          schema: {
            tags,
            summary: 'Published apps, newest first, in English or Spanish (falling back to English)',
            querystring: StoreListQuery,
            response: { 200: Page(StoreAppSchema), ...errorResponses(400, 401, 403, 404) },
          },
        },
        async (request) => listStoreApps(ctx, requireUser(request.principal).userId, request.query),
      );

      signedIn.get(
        '/v1/store/apps/:id',
        {
          config: { auth: 'session' },
          schema: {
            tags,
            summary: 'One published app with its scopes and their justifications',
            params: StoreAppParams,
            querystring: StoreAppQuery,
            response: { 200: StoreAppSchema, ...errorResponses(400, 401, 403, 404) },
          },
        },
        async (request) =>
          getStoreApp(ctx, requireUser(request.principal).userId, request.params.id, request.query),
      );
    };
    await app.register(signedInRoutes);
  };
}

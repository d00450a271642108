import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { errorResponses, Page } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import { AppParams } from '../apps/schemas.ts';
import { AppInstallationSchema, AppInstallationsQuery, AppStatsQuery, AppStatsSchema } from './schemas.ts';
import { appStats, listAppInstallations } from './service.ts';

const tags = ['Developer'];

/**
 * Counts every API request made with an app's access token by status class, and each problem code
 * answered to it. The AppUsage counter adds them to the database in batches.
 */
export function registerAppUsageCounting(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onResponse', (request, reply, done) => {
    const principal = request.principal;
    if (principal?.kind === 'app_token') {
      const status = reply.statusCode;
      ctx.appUsage.count(principal.appId, 'api', `${Math.floor(status / 100)}xx`);
      if (status >= 400)
        ctx.appUsage.count(principal.appId, 'api_error', request.problemCode ?? String(status));
    }
    done();
  });
  app.addHook('onReady', async () => ctx.appUsage.start());
  app.addHook('onClose', async () => ctx.appUsage.stop());
}

/** The developer console's API (CONTRACT.md): the app's developer only, by session token. */
export function consoleRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/developer/apps/:id/installations',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Every installation of the app, uninstalled ones included, with its status',
          params: AppParams,
          querystring: AppInstallationsQuery,
          response: { 200: Page(AppInstallationSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listAppInstallations(ctx, requireUser(request.principal).userId, request.params.id, request.query),
    );

    app.get(
      '/v1/developer/apps/:id/stats',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'How the app is doing: installations, API requests and errors, tokens, event delivery',
          description:
            "Counts requests made with the app's access tokens and its token grants per UTC hour; each Waybill process adds its counts every 10 seconds.",
          params: AppParams,
          querystring: AppStatsQuery,
          response: { 200: AppStatsSchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        appStats(ctx, requireUser(request.principal).userId, request.params.id, request.query.window ?? '7d'),
    );
  };
}

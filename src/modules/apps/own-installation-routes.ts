import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses } from '../../http/schemas.ts';
import { giveBackScope, muteEventTypes, ownInstallation } from './own-installation.ts';
import { MuteBody, OwnInstallationSchema, ScopeParams } from './schemas.ts';

/** The app itself, with its access token: its own installation (CONTRACT.md "Apps as code"). */
export function ownInstallationRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    // The scope is what an app receiving shipment events holds; API tokens are refused.
    app.get(
      '/v1/installation',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags: ['Installations'],
          summary:
            "The calling app's installation: grant, muted types and effective subscriptions (app token)",
          response: { 200: OwnInstallationSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => ownInstallation(ctx, request.principal),
    );

    app.patch(
      '/v1/installation',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags: ['Installations'],
          summary:
            "Narrow the calling app's subscriptions for its installation: mute event types (app token)",
          body: MuteBody,
          response: { 200: OwnInstallationSchema, ...errorResponses(400, 401, 403, 404, 422) },
        },
      },
      async (request) => muteEventTypes(ctx, request.principal, request.body),
    );

    app.delete(
      '/v1/installation/scopes/:scope',
      {
        config: { auth: { scope: 'shipments:read' } },
        schema: {
          tags: ['Installations'],
          summary:
            "Give a scope back: the calling app's grant narrows at once and app.scopes_updated is sent (app token)",
          params: ScopeParams,
          response: { 200: OwnInstallationSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) => giveBackScope(ctx, request.principal, request.params.scope),
    );
  };
}

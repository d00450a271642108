import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Page, PageQuery } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import { BulkReplayResultSchema } from '../webhooks/schemas.ts';
import {
  AppParams,
  AppVersionSchema,
  BulkReplayQuery,
  CreateVersionBody,
  EffectiveSubscriptionsSchema,
  InstallationOfAppParams,
  ReplayOutcomeSchema,
  SubscriptionDeliveryParams,
  SubscriptionDeliveryQuery,
  SubscriptionDeliverySchema,
  VersionParams,
} from './schemas.ts';
import {
  effectiveSubscriptions,
  listSubscriptionDeliveries,
  replayFailedSubscriptionDeliveries,
  replaySubscriptionDelivery,
} from './subscription-deliveries.ts';
import { createVersion, getVersion, listVersions, releaseVersion } from './versions.ts';

const tags = ['Developer'];

/** Apps as code (CONTRACT.md "Apps as code"): versions of an app's manifest; a person's session token. */
export function versionRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Who may call comes before what they sent.
    app.addHook('preValidation', async (request) => {
      requireUser(request.principal);
    });
    const userOf = (principal: Parameters<typeof requireUser>[0]) => requireUser(principal).userId;

    app.post(
      '/v1/developer/apps/:id/versions',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'A new version of the manifest, as a draft, with its changes from the active version',
          params: AppParams,
          body: CreateVersionBody,
          response: { 201: AppVersionSchema, ...errorResponses(400, 401, 403, 404, 422) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(await createVersion(ctx, userOf(request.principal), request.params.id, request.body)),
    );

    app.get(
      '/v1/developer/apps/:id/versions',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: "The app's versions, newest first",
          params: AppParams,
          querystring: PageQuery,
          response: { 200: Page(AppVersionSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => listVersions(ctx, userOf(request.principal), request.params.id, request.query),
    );

    app.get(
      '/v1/developer/apps/:id/versions/:vid',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'One version',
          params: VersionParams,
          response: { 200: AppVersionSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => getVersion(ctx, userOf(request.principal), request.params.id, request.params.vid),
    );

    app.post(
      '/v1/developer/apps/:id/versions/:vid/release',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary:
            'Release: the version becomes active and the app takes its fields; an older one rolls back',
          description:
            'On a published app, a version that changes a reviewed field answers 409 `app.published_requires_review`: submit it with `version_id`, and approval releases it.',
          params: VersionParams,
          response: { 200: AppVersionSchema, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) =>
        releaseVersion(ctx, userOf(request.principal), request.params.id, request.params.vid),
    );

    app.get(
      '/v1/developer/apps/:id/subscription-deliveries',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: "The messages of the app's subscriptions, newest first, with their attempts",
          params: AppParams,
          querystring: SubscriptionDeliveryQuery,
          response: { 200: Page(SubscriptionDeliverySchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listSubscriptionDeliveries(ctx, userOf(request.principal), request.params.id, request.query),
    );

    app.post(
      '/v1/developer/apps/:id/subscription-deliveries/replay',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary:
            "Queue again every failed and cancelled message of the app's subscriptions of the last 7 days (of one installation with installation_id)",
          params: AppParams,
          querystring: BulkReplayQuery,
          response: { 200: BulkReplayResultSchema, ...errorResponses(400, 401, 403, 404, 429) },
        },
      },
      async (request) =>
        replayFailedSubscriptionDeliveries(ctx, userOf(request.principal), request.params.id, request.query),
    );

    app.post(
      '/v1/developer/apps/:id/subscription-deliveries/:delivery_id/replay',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Send a subscription message again now, with the same webhook-id',
          params: SubscriptionDeliveryParams,
          response: { 200: ReplayOutcomeSchema, ...errorResponses(401, 403, 404, 409, 429) },
        },
      },
      async (request) =>
        replaySubscriptionDelivery(
          ctx,
          userOf(request.principal),
          request.params.id,
          request.params.delivery_id,
        ),
    );

    app.get(
      '/v1/developer/apps/:id/installations/:inst_id/subscriptions',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: "An installation's effective subscriptions: what is sent, what is withheld and why",
          params: InstallationOfAppParams,
          response: { 200: EffectiveSubscriptionsSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) =>
        effectiveSubscriptions(ctx, userOf(request.principal), request.params.id, request.params.inst_id),
    );
  };
}

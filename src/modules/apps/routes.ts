import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Page, PageQuery } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import {
  AppParams,
  AppSchema,
  ClientSecretSchema,
  CreateAppBody,
  CreatedAppSchema,
  EventsBody,
  EventsSecretSchema,
  UpdateAppBody,
} from './schemas.ts';
import { revealEventsSecret, rotateClientSecret, rotateEventsSecret, setEventsUrl } from './secrets.ts';
import { createApp, getApp, listApps, updateApp } from './service.ts';

const tags = ['Developer'];

/**
 * The developer API (CONTRACT.md "Developer API"): a signed-in person's session token only; API
 * tokens and app tokens get 403 auth.session_required (spec 5.2).
 */
export function developerRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/developer/apps',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Register an app; the client secret is shown once',
          body: CreateAppBody,
          response: { 201: CreatedAppSchema, ...errorResponses(400, 401, 403) },
        },
      },
      async (request, reply) =>
        reply.code(201).send(await createApp(ctx, requireUser(request.principal).userId, request.body)),
    );

    app.get(
      '/v1/developer/apps',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Your apps',
          querystring: PageQuery,
          response: { 200: Page(AppSchema), ...errorResponses(400, 401, 403) },
        },
      },
      async (request) => listApps(ctx, requireUser(request.principal).userId, request.query),
    );

    app.get(
      '/v1/developer/apps/:id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'One of your apps',
          params: AppParams,
          response: { 200: AppSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => getApp(ctx, requireUser(request.principal).userId, request.params.id),
    );

    app.patch(
      '/v1/developer/apps/:id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Change any field but kind; a published app changes reviewed fields through review',
          params: AppParams,
          body: UpdateAppBody,
          response: { 200: AppSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) =>
        updateApp(ctx, requireUser(request.principal).userId, request.params.id, request.body),
    );

    app.post(
      '/v1/developer/apps/:id/client-secret/rotate',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'A new client secret; the old one stops at once',
          params: AppParams,
          response: { 200: ClientSecretSchema, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => rotateClientSecret(ctx, requireUser(request.principal).userId, request.params.id),
    );

    app.put(
      '/v1/developer/apps/:id/events',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Set the events URL (and, optionally, the event version of its messages)',
          params: AppParams,
          body: EventsBody,
          response: { 200: AppSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) =>
        setEventsUrl(
          ctx,
          requireUser(request.principal).userId,
          request.params.id,
          request.body.url,
          request.body.api_version,
        ),
    );

    app.get(
      '/v1/developer/apps/:id/events-secret',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Reveal the events secret',
          params: AppParams,
          response: { 200: EventsSecretSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => revealEventsSecret(ctx, requireUser(request.principal).userId, request.params.id),
    );

    app.post(
      '/v1/developer/apps/:id/events-secret/rotate',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'A new events secret; the previous one signs too for 24 h',
          params: AppParams,
          response: { 200: EventsSecretSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => rotateEventsSecret(ctx, requireUser(request.principal).userId, request.params.id),
    );
  };
}

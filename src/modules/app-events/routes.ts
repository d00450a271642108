import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses, Id, Nullable, Page, PageQuery, Timestamp } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import { moderateApp, requireReviewer } from '../apps/moderation.ts';
import { AppParams, AppSchema } from '../apps/schemas.ts';
import { listEventMessages, replayEventMessage, sendTestAppEvent } from './messages.ts';

const AttemptSchema = Type.Object({
  attempted_at: Timestamp,
  duration_ms: Type.Integer(),
  status_code: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  response_body: Nullable(Type.String({ description: 'The first 4 KB of the answer' })),
  trigger: Type.String(),
});

const EventMessageSchema = Type.Object({
  id: Type.String(),
  event_id: Type.String(),
  event_type: Type.String(),
  tenant_id: Type.String({ description: 'The company the event concerns (all zeros on a test message)' }),
  test: Type.Boolean(),
  status: Type.String(),
  attempt_count: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  last_status_code: Nullable(Type.Integer()),
  created_at: Timestamp,
  updated_at: Timestamp,
  attempts: Type.Array(AttemptSchema),
});

const OutcomeSchema = Type.Object({
  delivery_id: Type.String(),
  status_code: Nullable(Type.Integer()),
  response_body: Nullable(Type.String()),
  duration_ms: Type.Integer(),
  error: Nullable(Type.String()),
});

const MessageParams = Type.Object({ id: Id(64), delivery_id: Id(64) }, { additionalProperties: false });
const ReasonBody = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 1000,
      pattern: '\\S',
      description: 'Why: the developer and the audit log read it; not blank',
    }),
  },
  { additionalProperties: false },
);

/** App-event messages for their developer, and the reviewers' moderation of apps. */
export function appEventRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/developer/apps/:id/event-messages',
      {
        config: { auth: 'session' },
        schema: {
          tags: ['Developer'],
          summary: 'The latest app-event messages with their status and attempts (spec 6.6)',
          params: AppParams,
          querystring: PageQuery,
          response: { 200: Page(EventMessageSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listEventMessages(ctx, requireUser(request.principal).userId, request.params.id, request.query),
    );

    app.post(
      '/v1/developer/apps/:id/event-messages/:delivery_id/replay',
      {
        config: { auth: 'session' },
        schema: {
          tags: ['Developer'],
          summary: 'Send an app-event message again now, with the same webhook-id',
          params: MessageParams,
          response: { 200: OutcomeSchema, ...errorResponses(401, 403, 404, 409, 429) },
        },
      },
      async (request) =>
        replayEventMessage(
          ctx,
          requireUser(request.principal).userId,
          request.params.id,
          request.params.delivery_id,
        ),
    );

    app.post(
      '/v1/developer/apps/:id/event-messages/test',
      {
        config: { auth: 'session' },
        schema: {
          tags: ['Developer'],
          summary: 'Send a test app.uninstalled (test: true, no real company) to the events URL',
          params: AppParams,
          response: { 200: OutcomeSchema, ...errorResponses(401, 403, 404, 409, 429) },
        },
      },
      async (request) => sendTestAppEvent(ctx, requireUser(request.principal).userId, request.params.id),
    );

    for (const action of ['suspend', 'delist', 'reinstate'] as const) {
      app.post(
        `/v1/review/apps/:id/${action}`,
        {
          config: { auth: 'session' },
          // Who may call comes before what they sent: a non-reviewer is 403 whatever the body.
          preValidation: async (request) => {
            await requireReviewer(ctx, requireUser(request.principal).userId);
          },
          schema: {
            tags: ['Review'],
            summary:
              action === 'suspend'
                ? 'Suspend an app: its tokens, webhooks and app events stop at once (held, not lost)'
                : action === 'delist'
                  ? 'Take a published app off the store; installations keep working'
                  : 'Reinstate a suspended or delisted app; what was held is sent',
            params: AppParams,
            body: ReasonBody,
            response: { 200: AppSchema, ...errorResponses(400, 401, 403, 404, 409) },
          },
        },
        async (request) =>
          moderateApp(
            ctx,
            requireUser(request.principal).userId,
            request.params.id,
            action,
            request.body.reason,
          ),
      );
    }
  };
}

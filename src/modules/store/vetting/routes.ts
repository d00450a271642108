import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../../context.ts';
import { errorResponses, Page } from '../../../http/schemas.ts';
import { requireUser } from '../../accounts/access.ts';
import { SubmissionSchema } from '../submissions/schemas.ts';
import {
  DecisionBody,
  QueueItemSchema,
  QueueQuery,
  ReviewedSubmissionSchema,
  SubmissionIdParams,
} from './schemas.ts';
import { decide, requireReviewer, reviewQueue, startReview, submissionForReview } from './service.ts';

const tags = ['Review'];

/** /v1/review/...: reviewers only (WAYBILL_REVIEWER_EMAILS); anyone else gets 403 on every path. */
export function vettingRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Who may call comes before what they sent.
    app.addHook('preValidation', async (request) => {
      await requireReviewer(ctx, requireUser(request.principal).userId);
    });
    const reviewer = (principal: Parameters<typeof requireUser>[0]) => requireUser(principal).userId;

    app.get(
      '/v1/review/submissions',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'The review queue, oldest first (default: submitted and in_review)',
          querystring: QueueQuery,
          response: { 200: Page(QueueItemSchema), ...errorResponses(400, 401, 403) },
        },
      },
      async (request) => reviewQueue(ctx, reviewer(request.principal), request.query),
    );

    app.get(
      '/v1/review/submissions/:id',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: "A submission beside the app's live values and store listing",
          params: SubmissionIdParams,
          response: { 200: ReviewedSubmissionSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => submissionForReview(ctx, reviewer(request.principal), request.params.id),
    );

    app.post(
      '/v1/review/submissions/:id/start',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Start the review: submitted -> in_review',
          params: SubmissionIdParams,
          response: { 200: SubmissionSchema, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => startReview(ctx, reviewer(request.principal), request.params.id),
    );

    app.post(
      '/v1/review/submissions/:id/decision',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Decide: approved (publishes), rejected or changes_requested, with a note',
          params: SubmissionIdParams,
          body: DecisionBody,
          response: { 200: SubmissionSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) => decide(ctx, reviewer(request.principal), request.params.id, request.body),
    );
  };
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../../context.ts';
import { errorResponses, Page, PageQuery } from '../../../http/schemas.ts';
import { requireUser } from '../../accounts/access.ts';
import { requireReviewer } from '../../apps/moderation.ts';
import { AppParams } from '../../apps/schemas.ts';
import { setReviewHidden } from './hiding.ts';
import { developerReviews, replyToReview } from './replies.ts';
import { createReview, deleteReview, listReviews, updateReview } from './reviews.ts';
import {
  AppReviewParams,
  HideBody,
  ReplyBody,
  ReviewBody,
  ReviewIdParams,
  ReviewPatchBody,
  ReviewSchema,
} from './schemas.ts';

/**
 * Ratings and reviews (CONTRACT.md "Store trust"): companies review in the store, the developer
 * replies in the developer API, reviewers hide. A person's session token everywhere.
 */
export function ratingRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addHook('preValidation', async (request) => {
      requireUser(request.principal);
    });
    const person = (principal: Parameters<typeof requireUser>[0]) => requireUser(principal).userId;
    const store = ['App Store'];

    app.get(
      '/v1/store/apps/:id/reviews',
      {
        config: { auth: 'session' },
        schema: {
          tags: store,
          summary: "The app's reviews, newest first, with the developer's replies",
          params: AppParams,
          querystring: PageQuery,
          response: { 200: Page(ReviewSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => listReviews(ctx, person(request.principal), request.params.id, request.query),
    );

    app.post(
      '/v1/store/apps/:id/reviews',
      {
        config: { auth: 'session' },
        schema: {
          tags: store,
          summary: 'Review the app for your company (owner or admin; installed 7 days; one per company)',
          params: AppParams,
          body: ReviewBody,
          response: { 201: ReviewSchema, ...errorResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(await createReview(ctx, person(request.principal), request.params.id, request.body)),
    );

    app.patch(
      '/v1/store/apps/:id/reviews/:review_id',
      {
        config: { auth: 'session' },
        schema: {
          tags: store,
          summary: "Edit your company's review",
          params: AppReviewParams,
          body: ReviewPatchBody,
          response: { 200: ReviewSchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        updateReview(
          ctx,
          person(request.principal),
          request.params.id,
          request.params.review_id,
          request.body,
        ),
    );

    app.delete(
      '/v1/store/apps/:id/reviews/:review_id',
      {
        config: { auth: 'session' },
        schema: {
          tags: store,
          summary: "Delete your company's review",
          params: AppReviewParams,
          response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) => {
        await deleteReview(ctx, person(request.principal), request.params.id, request.params.review_id);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/developer/apps/:id/reviews',
      {
        config: { auth: 'session' },
        schema: {
          tags: ['Developer'],
          summary: "Your app's reviews, hidden ones included with the reviewer's reason",
          params: AppParams,
          querystring: PageQuery,
          response: { 200: Page(ReviewSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => developerReviews(ctx, person(request.principal), request.params.id, request.query),
    );

    app.put(
      '/v1/developer/apps/:id/reviews/:review_id/reply',
      {
        config: { auth: 'session' },
        schema: {
          tags: ['Developer'],
          summary: 'Answer a review (one reply, editable)',
          params: AppReviewParams,
          body: ReplyBody,
          response: { 200: ReviewSchema, ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        replyToReview(
          ctx,
          person(request.principal),
          request.params.id,
          request.params.review_id,
          request.body,
        ),
    );

    app.post(
      '/v1/review/reviews/:review_id/hide',
      {
        config: { auth: 'session' },
        schema: {
          tags: ['Review'],
          summary: 'Hide a review from the store, with a reason (reviewers)',
          params: ReviewIdParams,
          body: HideBody,
          response: { 200: ReviewSchema, ...errorResponses(400, 401, 403, 404) },
        },
        // Who may call comes before what they sent.
        preValidation: async (request) => requireReviewer(ctx, person(request.principal)),
      },
      async (request) =>
        setReviewHidden(ctx, person(request.principal), request.params.review_id, request.body),
    );

    app.post(
      '/v1/review/reviews/:review_id/show',
      {
        config: { auth: 'session' },
        schema: {
          tags: ['Review'],
          summary: 'Show a hidden review again (reviewers)',
          params: ReviewIdParams,
          response: { 200: ReviewSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => setReviewHidden(ctx, person(request.principal), request.params.review_id, null),
    );
  };
}

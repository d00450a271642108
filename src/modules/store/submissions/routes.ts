import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../../context.ts';
import { errorResponses, Page, PageQuery } from '../../../http/schemas.ts';
import { AppError } from '../../../lib/errors.ts';
import { requireUser } from '../../accounts/access.ts';
import { AppParams } from '../../apps/schemas.ts';
import { checkRunsRateLimit } from './rate-limits.ts';
import {
  ChecksBody,
  ChecksSchema,
  IdempotencyHeaders,
  SubmissionBody,
  SubmissionParams,
  SubmissionSchema,
} from './schemas.ts';
import { checkBeforeSubmitting, createSubmission, listSubmissions, withdrawSubmission } from './service.ts';

const tags = ['Developer'];

/** The App Store part of the developer API (CONTRACT.md "Developer API"): a person's session token only. */
export function submissionRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Authenticate before validating: a caller without a person's token learns nothing about bodies.
    app.addHook('preValidation', async (request) => {
      requireUser(request.principal);
    });

    app.post(
      '/v1/developer/apps/:id/submissions',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Submit the app to the App Store (Idempotency-Key required); the automated checks run now',
          params: AppParams,
          headers: IdempotencyHeaders,
          body: SubmissionBody,
          response: { 201: SubmissionSchema, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
        preValidation: async (request) => {
          if (!request.headers['idempotency-key']) {
            throw new AppError(
              'validation.failed',
              'Send an Idempotency-Key header: submissions require one',
              {
                errors: [{ path: 'headers:/idempotency-key', message: 'required' }],
              },
            );
          }
        },
      },
      async (request, reply) => {
        try {
          const submission = await createSubmission(
            ctx,
            requireUser(request.principal).userId,
            request.params.id,
            request.body,
          );
          return reply.code(201).send(submission);
        } catch (error) {
          if (error instanceof AppError && error.code === 'submission.cooling_down') {
            const opensAt = Date.parse(String(error.extra.opens_at));
            const seconds = Math.max(1, Math.ceil((opensAt - ctx.clock.now().getTime()) / 1000));
            reply.header('retry-after', String(seconds));
          }
          throw error;
        }
      },
    );

    app.get(
      '/v1/developer/apps/:id/submissions',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: "The app's submissions, newest first, with status, checks and the reviewer's note",
          params: AppParams,
          querystring: PageQuery,
          response: { 200: Page(SubmissionSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        listSubmissions(ctx, requireUser(request.principal).userId, request.params.id, request.query),
    );

    app.post(
      '/v1/developer/apps/:id/submissions/:sub_id/withdraw',
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: 'Withdraw a waiting submission; the app stays as it was',
          params: SubmissionParams,
          response: { 200: SubmissionSchema, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) =>
        withdrawSubmission(
          ctx,
          requireUser(request.principal).userId,
          request.params.id,
          request.params.sub_id,
        ),
    );

    app.post(
      '/v1/developer/apps/:id/events-url-checks',
      {
        config: { auth: 'session', rateLimit: checkRunsRateLimit },
        schema: {
          tags,
          summary: 'Run the automated checks now, without submitting ("Check my events URL")',
          description:
            "Sends the two test messages to the events URL (or to `events_url` when given) and checks `scope_justifications` against the app's scopes (or `scopes`). The answer is the checks a submission would record.",
          params: AppParams,
          body: ChecksBody,
          response: { 200: ChecksSchema, ...errorResponses(400, 401, 403, 404, 429) },
        },
        preValidation: async (request) => {
          request.body ??= {};
        },
      },
      async (request) =>
        checkBeforeSubmitting(ctx, requireUser(request.principal).userId, request.params.id, request.body),
    );
  };
}

import type { FastifyPluginAsync, FastifyReply, RouteGenericInterface } from 'fastify';
import type { AppContext } from '../../../context.ts';
import { AppError } from '../../../lib/errors.ts';
import { type PageHandler, signedInPage } from '../../../web/dashboard.ts';
import { html } from '../../../web/html.ts';
import { sendPage } from '../../../web/layout.ts';
import { confirmationBody } from '../../../web/pages/confirm.ts';
import { type ModerationAction, moderateApp } from '../../apps/moderation.ts';
import type { SubmissionStatus } from '../tables.ts';
import {
  DECISIONS,
  type Decision,
  decide,
  requireReviewer,
  reviewQueue,
  startReview,
  submissionForReview,
} from './service.ts';
import { consolePage, queuePage, reviewPage } from './views.ts';

type Form = Record<string, string | string[] | undefined>;
type SubmissionRoute = { Params: { id: string }; Body: Form; Querystring: { done?: string } };
type QueueRoute = { Querystring: { status?: string; cursor?: string } };

const STATUSES: readonly SubmissionStatus[] = [
  'submitted',
  'in_review',
  'approved',
  'rejected',
  'changes_requested',
  'withdrawn',
];

const one = (value: Form[string]): string => (Array.isArray(value) ? (value[0] ?? '') : (value ?? ''));

const DONE: Record<string, string> = {
  started: 'Review started: the submission is in review.',
  decided: 'Decision recorded. The developer sees it with your note.',
  moderated: 'Done: the app status changed, and the reason is in the audit log.',
};

const MODERATION_ACTIONS: readonly ModerationAction[] = ['suspend', 'delist', 'reinstate'];
type ModerationRoute = { Params: { id: string; action: string }; Body: Form };

/** What the console answers to a refused action or a missing submission; a 5xx goes on. */
function refusedPage(error: AppError, csrf: string, reply: FastifyReply) {
  if (error.status >= 500) return undefined;
  const heading =
    error.status === 403 ? 'Not allowed' : error.status === 404 ? 'Not found' : 'That did not work';
  const body = html`<section class="card narrow"><h1>${heading}</h1><p>${error.message}</p>
<p><a class="button secondary" href="/dashboard">Back to the dashboard</a></p></section>`;
  return sendPage(reply, consolePage({ csrf }, heading, body), error.status);
}

/** The review console (reviewers only): the queue, a submission beside the live app, start and decide. */
export function vettingPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const hide = { schema: { hide: true } };
    const post = { ...hide, preValidation: app.csrfProtection };

    /** A console page: signed in, then a reviewer (403 page otherwise), then the handler. */
    const page = <R extends RouteGenericInterface>(handler: PageHandler<R>) =>
      signedInPage<R>(ctx, refusedPage, async (userId, csrf, request, reply) => {
        await requireReviewer(ctx, userId);
        return handler(userId, csrf, request, reply);
      });

    app.get<QueueRoute>(
      '/review',
      hide,
      page<QueueRoute>(async (reviewerId, csrf, request, reply) => {
        const wanted = request.query.status ?? '';
        const status = (STATUSES as readonly string[]).includes(wanted) ? (wanted as SubmissionStatus) : '';
        const queue = await reviewQueue(ctx, reviewerId, {
          limit: 50,
          ...(status ? { status } : {}),
          ...(request.query.cursor ? { cursor: request.query.cursor } : {}),
        });
        return sendPage(reply, queuePage({ csrf }, status, queue.data, queue.next_cursor));
      }),
    );

    const showSubmission = async (
      reply: FastifyReply,
      reviewerId: string,
      csrf: string,
      id: string,
      flash: { kind: 'ok' | 'error'; message: string } | null,
      status = 200,
    ) => sendPage(reply, reviewPage({ csrf, flash }, await submissionForReview(ctx, reviewerId, id)), status);

    app.get<SubmissionRoute>(
      '/review/submissions/:id',
      hide,
      page<SubmissionRoute>(async (reviewerId, csrf, request, reply) => {
        const message = DONE[request.query.done ?? ''];
        return showSubmission(
          reply,
          reviewerId,
          csrf,
          request.params.id,
          message ? { kind: 'ok', message } : null,
        );
      }),
    );

    /** A console action: done, back to the submission; refused, the submission with the reason. */
    const action = (run: (reviewerId: string, id: string, form: Form) => Promise<unknown>, done: string) =>
      page<SubmissionRoute>(async (reviewerId, csrf, request, reply) => {
        const id = request.params.id;
        try {
          await run(reviewerId, id, request.body ?? {});
          return reply.redirect(`/review/submissions/${encodeURIComponent(id)}?done=${done}`, 303);
        } catch (error) {
          if (!(error instanceof AppError) || error.status === 404 || error.status >= 500) throw error;
          return showSubmission(
            reply,
            reviewerId,
            csrf,
            id,
            { kind: 'error', message: error.message },
            error.status,
          );
        }
      });

    app.post<ModerationRoute>(
      '/review/apps/:id/:action',
      post,
      page<ModerationRoute>(async (reviewerId, csrf, request, reply) => {
        const form = request.body ?? {};
        const submissionId = one(form.submission_id);
        const action = request.params.action as ModerationAction;
        if (!MODERATION_ACTIONS.includes(action)) throw new AppError('request.not_found');
        // Suspending asks once more, the reason carried on in the form's body.
        if (action === 'suspend' && one(form.confirmed) !== 'yes' && one(form.reason).trim() !== '') {
          const question = 'Suspend this app?';
          const body = confirmationBody(csrf, {
            question,
            lost: [
              'It leaves the App Store, and every installation stops at once: its tokens are refused and its endpoints receive nothing.',
              'Companies that use it see it suspended; reinstating brings it back.',
              `Reason kept in the audit log: ${one(form.reason).trim().slice(0, 1000) || '(none given)'}`,
            ],
            action: `/review/apps/${encodeURIComponent(request.params.id)}/suspend`,
            confirm: 'Suspend app',
            back: `/review/submissions/${encodeURIComponent(submissionId)}`,
            fields: { submission_id: submissionId, reason: one(form.reason).slice(0, 1000) },
          });
          return sendPage(reply, consolePage({ csrf }, question, body));
        }
        try {
          await moderateApp(
            ctx,
            reviewerId,
            request.params.id,
            action,
            one(form.reason).trim().slice(0, 1000),
          );
          return reply.redirect(
            `/review/submissions/${encodeURIComponent(submissionId)}?done=moderated`,
            303,
          );
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500 || !submissionId) throw error;
          const flash = { kind: 'error' as const, message: error.message };
          return showSubmission(reply, reviewerId, csrf, submissionId, flash, error.status);
        }
      }),
    );

    app.post<SubmissionRoute>(
      '/review/submissions/:id/start',
      post,
      action((reviewerId, id) => startReview(ctx, reviewerId, id), 'started'),
    );

    app.post<SubmissionRoute>(
      '/review/submissions/:id/decision',
      post,
      action(async (reviewerId, id, form) => {
        const decision = one(form.decision);
        if (!(DECISIONS as readonly string[]).includes(decision)) {
          throw new AppError('validation.failed', 'Choose approve, request changes or reject', {
            errors: [{ path: '/decision', message: `one of ${DECISIONS.join(', ')}` }],
          });
        }
        return decide(ctx, reviewerId, id, {
          decision: decision as Decision,
          note: one(form.note).slice(0, 4000),
        });
      }, 'decided'),
    );
  };
}

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
type QuestionRoute = { Params: { id: string; action: string }; Querystring: { submission_id?: string } };
/** The moderations that ask once more, on a page of their own. */
const ASKED = ['suspend', 'delist'] as const;

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
        return sendPage(
          reply,
          queuePage({ csrf, now: ctx.clock.now() }, status, queue.data, queue.next_cursor),
        );
      }),
    );

    const showSubmission = async (
      reply: FastifyReply,
      reviewerId: string,
      csrf: string,
      id: string,
      flash: { kind: 'ok' | 'error'; message: string } | null,
      status = 200,
    ) =>
      sendPage(
        reply,
        reviewPage({ csrf, flash, now: ctx.clock.now() }, await submissionForReview(ctx, reviewerId, id)),
        status,
      );

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

    /** Where a moderation goes back to: the submission it was taken from, or the queue. */
    const backTo = (submissionId: string) =>
      submissionId ? `/review/submissions/${encodeURIComponent(submissionId)}` : '/review';

    // The second question (CONTRACT.md, "The dashboard's manners"): suspending or delisting is a
    // page of its own, by GET, naming the app and the companies it stops for; it changes nothing.
    // The reason the audit log keeps is asked there, in the confirming form.
    app.get<QuestionRoute>(
      '/review/apps/:id/:action',
      hide,
      page<QuestionRoute>(async (_reviewerId, csrf, request, reply) => {
        const action = request.params.action;
        if (!(ASKED as readonly string[]).includes(action)) throw new AppError('request.not_found');
        const found = await ctx.db
          .selectFrom('apps')
          .select(['id', 'name', 'status'])
          .where('id', '=', request.params.id.slice(0, 64))
          .executeTakeFirst();
        if (!found) throw new AppError('app.not_found');
        const installed = await ctx.db
          .selectFrom('installations')
          .select((eb) => eb.fn.count<number>('tenant_id').distinct().as('n'))
          .where('app_id', '=', found.id)
          .executeTakeFirstOrThrow();
        const companies = Number(installed.n);
        const submissionId = (request.query.submission_id ?? '').slice(0, 64);
        const question = action === 'suspend' ? `Suspend ${found.name}?` : `Delist ${found.name}?`;
        const using = `${companies} ${companies === 1 ? 'company has' : 'companies have'} it installed`;
        const lost =
          action === 'suspend'
            ? [
                `It leaves the App Store, and every installation stops at once (${using}): its tokens are refused and its endpoints receive nothing.`,
                'Companies that use it see it suspended; reinstating brings it back.',
                'The reason below is kept in the audit log, and the developer reads it.',
              ]
            : [
                'It leaves the App Store at once: no company finds or installs it any more.',
                `Companies that installed it keep it, and it keeps working for them (${using}).`,
                'The reason below is kept in the audit log, and the developer reads it.',
              ];
        const body = confirmationBody(csrf, {
          question,
          lost,
          action: `/review/apps/${encodeURIComponent(found.id)}/${action}`,
          confirm: action === 'suspend' ? `Suspend ${found.name}` : `Delist ${found.name}`,
          back: backTo(submissionId),
          fields: { submission_id: submissionId },
          inputs: html`<label>Reason <input name="reason" required pattern=".*\S.*" maxlength="1000"></label>`,
        });
        return sendPage(reply, consolePage({ csrf }, question, body));
      }),
    );

    app.post<ModerationRoute>(
      '/review/apps/:id/:action',
      post,
      page<ModerationRoute>(async (reviewerId, csrf, request, reply) => {
        const form = request.body ?? {};
        const submissionId = one(form.submission_id).slice(0, 64);
        const action = request.params.action as ModerationAction;
        if (!MODERATION_ACTIONS.includes(action)) throw new AppError('request.not_found');
        // Only the question's own form suspends or delists; anything else is sent to the question.
        if ((ASKED as readonly string[]).includes(action) && one(form.confirmed) !== 'yes') {
          const query = submissionId ? `?${new URLSearchParams({ submission_id: submissionId })}` : '';
          return reply.redirect(
            `/review/apps/${encodeURIComponent(request.params.id)}/${action}${query}`,
            303,
          );
        }
        try {
          await moderateApp(
            ctx,
            reviewerId,
            request.params.id,
            action,
            one(form.reason).trim().slice(0, 1000),
          );
          return reply.redirect(submissionId ? `${backTo(submissionId)}?done=moderated` : '/review', 303);
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

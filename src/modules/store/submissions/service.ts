import type { AppContext } from '../../../context.ts';
import { newestFirst } from '../../../db/paging.ts';
import { AppError, type FieldError, validationError } from '../../../lib/errors.ts';
import { newId } from '../../../lib/ids.ts';
import type { Page, PageRequest } from '../../../lib/paging.ts';
import type { Scope } from '../../accounts/roles.ts';
import type { AppPatch } from '../../apps/fields.ts';
import { APP_FIELDS, type Manifest } from '../../apps/manifest.ts';
import { jsonArray } from '../../apps/registry.ts';
import { type App, getApp, normalizeAppPatch, type ReviewedValues } from '../../apps/service.ts';
import { versionRow } from '../../apps/versions.ts';
import { spendOutbound } from '../../outbound/budget.ts';
import type { Check } from '../checks/check.ts';
import { runSubmissionChecks } from '../checks/pipeline.ts';
import { REJECTIONS_LOOKBACK_MS, submissionsOpenAt } from '../listing/cooldown.ts';
import { checkListing, type Listing, type ScopeJustification } from '../listing/rules.ts';
import type { MediaSet } from '../media/images.ts';
import { draftMediaNames, mediaSet, parseMediaNames } from '../media/service.ts';
import type { AppSubmissionsTable, SubmissionStatus } from '../tables.ts';

/** The app's reviewed values as a submission carries them in `app`; its events URL travels beside. */
export type AppSnapshot = Omit<ReviewedValues, 'events_url'>;

/** Proposed new app values (spec 2.8 `app`): any field PATCH takes but kind and the events URL. */
export type ProposedAppValues = Omit<AppPatch, 'events_url'>;

export interface SubmissionInput {
  listing: Listing;
  note?: string | null;
  app?: ProposedAppValues;
  events_url?: string | null;
  /** An app version put forward instead of `app` and `events_url`: approval releases it. */
  version_id?: string | null;
}

/** A submission as the API shows it (CONTRACT.md, submission fields). */
export interface Submission {
  id: string;
  app_id: string;
  status: SubmissionStatus;
  updates_published_app: boolean;
  listing: Listing;
  note: string | null;
  app: AppSnapshot;
  events_url: string | null;
  /** The listing's icon and screenshots as submitted. */
  media: MediaSet;
  checks: Check[];
  version_id: string | null;
  reviewer_note: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  decided_at: string | null;
}

export const WAITING: readonly SubmissionStatus[] = ['submitted', 'in_review'];

function parsed<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

export function presentSubmission(ctx: AppContext, row: AppSubmissionsTable): Submission {
  return {
    id: row.id,
    app_id: row.app_id,
    status: row.status,
    updates_published_app: row.updates_published_app,
    listing: parsed<Listing>(row.listing),
    note: row.note,
    app: parsed<AppSnapshot>(row.app_snapshot),
    events_url: row.events_url,
    media: mediaSet(ctx, row.app_id, parseMediaNames(row.media)),
    checks: jsonArray<Check>(row.checks),
    version_id: row.version_id ?? null,
    reviewer_note: row.reviewer_note,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    decided_at: row.decided_at?.toISOString() ?? null,
  };
}

/**
 * What a submission proposes: the fields of the version it names (a draft or an older version),
 * or the `app` values and events URL it carries, not both.
 */
async function proposedValues(ctx: AppContext, appId: string, input: SubmissionInput): Promise<AppPatch> {
  if (!input.version_id) {
    return {
      ...(input.app ?? {}),
      ...(input.events_url !== undefined ? { events_url: input.events_url } : {}),
    };
  }
  if (input.app !== undefined || input.events_url !== undefined) {
    throw validationError(
      [{ path: '/version_id', message: 'names the values to review: send it without app and events_url' }],
      'A submission proposes a version or values, not both',
      422,
    );
  }
  const version = await versionRow(ctx, appId, input.version_id);
  if (version.status === 'active') {
    throw validationError(
      [{ path: '/version_id', message: `version ${version.number} is already active` }],
      'The version is active already',
      422,
    );
  }
  const manifest = (
    typeof version.manifest === 'string' ? JSON.parse(version.manifest) : version.manifest
  ) as Manifest;
  return Object.fromEntries(APP_FIELDS.map((field) => [field, manifest[field]])) as AppPatch;
}

async function refuseWhilePending(ctx: AppContext, appId: string): Promise<void> {
  const waiting = await ctx.db
    .selectFrom('app_submissions')
    .select(['id', 'status'])
    .where('app_id', '=', appId)
    .where('status', 'in', WAITING)
    .executeTakeFirst();
  if (waiting) {
    throw new AppError(
      'submission.already_pending',
      `Submission ${waiting.id} is ${waiting.status}: withdraw it or wait for the decision`,
      { submission_id: waiting.id },
    );
  }
}

async function refuseWhileCoolingDown(ctx: AppContext, appId: string): Promise<void> {
  const now = ctx.clock.now();
  const rejections = await ctx.db
    .selectFrom('app_submissions')
    .select('decided_at')
    .where('app_id', '=', appId)
    .where('status', '=', 'rejected')
    .where('decided_at', '>', new Date(now.getTime() - REJECTIONS_LOOKBACK_MS))
    .execute();
  const opensAt = submissionsOpenAt(
    rejections.flatMap((r) => (r.decided_at ? [r.decided_at] : [])),
    now,
  );
  if (opensAt) {
    throw new AppError(
      'submission.cooling_down',
      `After 3 rejections within 90 days, new submissions open on ${opensAt.toISOString()}`,
      { opens_at: opensAt.toISOString() },
    );
  }
}

/** The values the submission puts forward: the live app's, with the proposed ones over them. */
function submittedValues(live: App, proposed: AppPatch): ReviewedValues {
  const pick = <K extends keyof AppPatch>(field: K, current: ReviewedValues[K]) =>
    (proposed[field] !== undefined ? proposed[field] : current) as ReviewedValues[K];
  return {
    name: pick('name', live.name),
    description: pick('description', live.description),
    homepage_url: pick('homepage_url', live.homepage_url),
    privacy_url: pick('privacy_url', live.privacy_url),
    support_url: pick('support_url', live.support_url),
    redirect_uris: pick('redirect_uris', live.redirect_uris),
    scopes: pick('scopes', live.scopes) as Scope[],
    events_url: pick('events_url', live.events_url),
  };
}

/** Spec 3.1: a submission needs a privacy URL, a support URL and an events URL; each missing one is named. */
function requireBasics(values: ReviewedValues): void {
  const missing: FieldError[] = [];
  if (!values.privacy_url) missing.push({ path: '/app/privacy_url', message: 'a privacy URL is required' });
  if (!values.support_url) missing.push({ path: '/app/support_url', message: 'a support URL is required' });
  if (!values.events_url) missing.push({ path: '/events_url', message: 'an events URL is required' });
  if (missing.length > 0) {
    const names = missing.map((m) => m.message.replace(/^an? /, '').replace(/ is required$/, ''));
    throw new AppError(
      'submission.requirements_missing',
      `Before submitting, give the app ${names.join(', ')}`,
      { errors: missing },
    );
  }
}

/** The automated checks send two messages to the events URL. */
function spendChecks(ctx: AppContext, userId: string, eventsUrl: string): Promise<void> {
  return spendOutbound(ctx, { account: { kind: 'user', id: userId }, url: eventsUrl, sends: 2 });
}

/**
 * POST /v1/developer/apps/{id}/submissions (spec 2.8, 3.1): checks the state, the proposed values
 * (as PATCH does), the requirements and the listing; runs the automated checks; stores the snapshot
 * as submitted. The live app does not change until a reviewer approves.
 */
export async function createSubmission(
  ctx: AppContext,
  userId: string,
  appId: string,
  input: SubmissionInput,
): Promise<Submission> {
  const live = await getApp(ctx, userId, appId);
  if (live.status === 'suspended') throw new AppError('app.suspended');
  await refuseWhilePending(ctx, live.id);
  await refuseWhileCoolingDown(ctx, live.id);
  // Proposed values pass PATCH's checks, the events URL guard included (a name that does not
  // resolve yet is the checks' finding, not a refusal).
  const proposed = await normalizeAppPatch(ctx, await proposedValues(ctx, live.id, input));
  const values = submittedValues(live, proposed);
  requireBasics(values);
  const listing = checkListing(input.listing, values.scopes);
  // The two messages spend from the person's and the events URL host's outbound budget, before
  // anything is sent or stored (decision 0028).
  if (values.events_url) await spendChecks(ctx, userId, values.events_url);
  // The checks talk to the developer's server: no transaction is open while they run.
  const media = await draftMediaNames(ctx, live.id);
  const checks = await runSubmissionChecks(ctx, { id: live.id, ...values }, listing, media);
  const { events_url, ...snapshot } = values;
  const now = ctx.clock.now();
  const row: AppSubmissionsTable = {
    id: newId('sub'),
    app_id: live.id,
    submitted_by: userId,
    status: 'submitted',
    updates_published_app: live.status === 'published',
    listing: JSON.stringify(listing),
    note: input.note?.trim() || null,
    app_snapshot: JSON.stringify(snapshot),
    events_url,
    checks: JSON.stringify(checks),
    media: JSON.stringify(media),
    reviewer_id: null,
    reviewer_note: null,
    created_at: now,
    updated_at: now,
    started_at: null,
    decided_at: null,
    version_id: input.version_id ?? null,
  };
  // The partial unique index keeps one waiting submission per app when two arrive at once.
  const inserted = await ctx.db
    .insertInto('app_submissions')
    .values(row)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) await refuseWhilePending(ctx, live.id);
  return presentSubmission(ctx, { ...row, listing, app_snapshot: snapshot, checks, media });
}

export async function listSubmissions(
  ctx: AppContext,
  userId: string,
  appId: string,
  page: PageRequest = {},
): Promise<Page<Submission>> {
  const app = await getApp(ctx, userId, appId);
  return newestFirst(
    ctx.db.selectFrom('app_submissions').selectAll().where('app_id', '=', app.id),
    'app_submissions',
    page,
    (row) => presentSubmission(ctx, row),
  );
}

export async function getSubmission(
  ctx: AppContext,
  userId: string,
  appId: string,
  submissionId: string,
): Promise<Submission> {
  const app = await getApp(ctx, userId, appId);
  const row = await ctx.db
    .selectFrom('app_submissions')
    .selectAll()
    .where('id', '=', submissionId)
    .where('app_id', '=', app.id)
    .executeTakeFirst();
  if (!row) throw new AppError('submission.not_found');
  return presentSubmission(ctx, row);
}

/** The developer takes a waiting submission back: status withdrawn; the app stays as it was. */
export async function withdrawSubmission(
  ctx: AppContext,
  userId: string,
  appId: string,
  submissionId: string,
): Promise<Submission> {
  const current = await getSubmission(ctx, userId, appId, submissionId);
  const row = await ctx.db
    .updateTable('app_submissions')
    .set({ status: 'withdrawn', updated_at: ctx.clock.now() })
    .where('id', '=', current.id)
    .where('status', 'in', WAITING)
    .returningAll()
    .executeTakeFirst();
  if (!row) {
    throw new AppError('submission.invalid_state', `A ${current.status} submission cannot be withdrawn`, {
      submission_status: current.status,
    });
  }
  return presentSubmission(ctx, row);
}

/**
 * "Check my events URL": the same automated checks, run now without submitting, against the app's
 * events URL or a proposed one, so the receiver can be fixed before a reviewer looks.
 */
export async function checkBeforeSubmitting(
  ctx: AppContext,
  userId: string,
  appId: string,
  input: { events_url?: string; scope_justifications?: ScopeJustification[]; scopes?: string[] },
): Promise<{ checks: Check[] }> {
  const live = await getApp(ctx, userId, appId);
  const proposed = await normalizeAppPatch(ctx, {
    ...(input.events_url !== undefined ? { events_url: input.events_url } : {}),
    ...(input.scopes !== undefined ? { scopes: input.scopes } : {}),
  });
  const values = submittedValues(live, proposed);
  const listing = input.scope_justifications ? { scope_justifications: input.scope_justifications } : null;
  if (values.events_url) await spendChecks(ctx, userId, values.events_url);
  const media = await draftMediaNames(ctx, live.id);
  return { checks: await runSubmissionChecks(ctx, { id: live.id, ...values }, listing, media) };
}

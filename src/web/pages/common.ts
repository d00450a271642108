import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { type DashboardView, dashboardPage } from '../dashboard.ts';
import { type Flash, leaveFlash, type ShownSecret, takeFlash } from '../flash.ts';
import { html, type SafeHtml } from '../html.ts';
import { layout, placesNav, sendPage } from '../layout.ts';

export type { Flash } from '../flash.ts';
export { formatTime, timeAgo, timeTag } from '../time.ts';

/** A posted form as @fastify/formbody parses it: repeated fields arrive as arrays. */
export type Form = Record<string, string | string[] | undefined>;

/**
 * Leaves a one-time message (and maybe a secret shown once) for the page a redirect lands on,
 * then answers 303 to it (post, redirect, get): a reload repeats nothing.
 */
export async function redirectWithFlash(
  ctx: AppContext,
  reply: FastifyReply,
  path: string,
  message: string,
  extra: { kind?: 'ok' | 'error'; secrets?: ShownSecret[]; note?: string } = {},
): Promise<FastifyReply> {
  await leaveFlash(ctx, reply, {
    kind: extra.kind ?? 'ok',
    message,
    secrets: extra.secrets ?? [],
    note: extra.note ?? null,
  });
  return reply.redirect(path, 303);
}

export interface PageOptions {
  title: string;
  path: string;
  status?: number;
  /** An error to show instead of any pending one-time message. */
  error?: string | null;
  /** The one-time message already taken (a page that read it first); otherwise it is taken here. */
  flash?: Flash | null;
}

/** Sends a dashboard page with the pending one-time message, or the given error, on top. */
export async function showPage(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  view: DashboardView,
  options: PageOptions,
  body: SafeHtml,
): Promise<FastifyReply> {
  const flash: Flash | null = options.error
    ? { kind: 'error', message: options.error }
    : options.flash !== undefined
      ? options.flash
      : await takeFlash(ctx, request, reply);
  return sendPage(
    reply,
    dashboardPage(view, { title: options.title, path: options.path, flash }, body),
    options.status ?? 200,
  );
}

/** What a person sees for a refused or missing thing: a plain message, never a stack. */
export function errorPage(error: AppError): SafeHtml {
  const heading =
    error.status === 404
      ? 'Not found'
      : error.status === 403
        ? 'Not allowed'
        : error.status >= 500
          ? 'Something went wrong'
          : 'That did not work';
  const detail =
    error.status === 404
      ? 'It does not exist, or it belongs to a company, merchant account or mode you are not viewing.'
      : error.message;
  return layout(
    { title: heading, nav: placesNav(null) },
    html`<section class="card narrow error-page">
<p class="muted">Error ${error.status}</p>
<h1>${heading}</h1>
<p>${detail}</p>
<p class="row"><a class="button" href="/dashboard">Back to the dashboard</a> <a class="button secondary" href="/developer/apps">Developer portal</a></p>
</section>`,
  );
}

/** The paths of pages people read: their errors are pages too, never problem JSON. */
const PAGE_PATH = /^\/(dashboard|developer|review)(\/|$|\?)/;

/**
 * The app-wide error handler's answer for pages (http/errors.ts): a 403, 404 or 500 of a
 * dashboard, developer portal or review console address is a page with a way back. A refused
 * form's CSRF check is one too. Any other address gets the problem details it always had.
 */
export function pageErrorAnswer(request: FastifyRequest, reply: FastifyReply, error: AppError) {
  if (!PAGE_PATH.test(request.url) && !browserLostItsWay(request, error)) return undefined;
  return sendErrorPage(request, reply, error);
}

/** The machine-read surfaces: their 404 stays problem JSON whatever the client accepts. */
const API_PATH = /^\/(v1|oauth|mcp|\.well-known|openapi\.json|metrics|healthz|readyz|static)(\/|$|\?)/;

/**
 * A browser's GET of an address that is no page (a mistyped or old link): a page with a way back,
 * not problem JSON. Only when it asks for HTML, so that API clients keep their problem details.
 */
function browserLostItsWay(request: FastifyRequest, error: AppError): boolean {
  return (
    error.code === 'request.not_found' &&
    request.method === 'GET' &&
    !API_PATH.test(request.url) &&
    /\btext\/html\b/.test(String(request.headers.accept ?? ''))
  );
}

/** Renders any error of a page as the friendly page; unknown ones are logged and leak nothing. */
export function sendErrorPage(request: FastifyRequest, reply: FastifyReply, error: AppError | null) {
  const known = error ?? new AppError('internal', `Something went wrong (request ${request.id})`);
  if (known.retryAfter !== undefined) reply.header('retry-after', String(known.retryAfter));
  return sendPage(reply, errorPage(known), known.status);
}

/** One text field, trimmed; empty is null. Longer than `max` is refused with the field's label. */
export function textField(form: Form, name: string, label: string, max: number): string | null {
  const raw = form[name];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim() ?? '';
  if (value.length > max) {
    throw new AppError('validation.failed', `${label} is longer than ${max} characters`, {
      errors: [{ path: `/${name}`, message: `at most ${max} characters` }],
    });
  }
  return value === '' ? null : value;
}

export function requiredField(form: Form, name: string, label: string, max: number): string {
  const value = textField(form, name, label, max);
  if (value === null) {
    throw new AppError('validation.failed', `${label} is required`, {
      errors: [{ path: `/${name}`, message: 'required' }],
    });
  }
  return value;
}

/** Every value of a repeated field (checkboxes). */
export function listField(form: Form, name: string): string[] {
  const raw = form[name];
  return raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
}

/** One of a closed list of values, or a validation error. */
export function choiceField<T extends string>(
  form: Form,
  name: string,
  label: string,
  allowed: readonly T[],
): T {
  const value = textField(form, name, label, 64);
  if (value === null || !(allowed as readonly string[]).includes(value)) {
    throw new AppError('validation.failed', `Choose a valid ${label.toLowerCase()}`, {
      errors: [{ path: `/${name}`, message: `one of ${allowed.join(', ')}` }],
    });
  }
  return value as T;
}

/** The "Next" link of a cursor-paged list, keeping the other query parameters. */
export function nextLink(path: string, params: Record<string, string | undefined>, cursor: string | null) {
  if (!cursor) return '';
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) query.set(key, value);
  query.set('cursor', cursor);
  return html`<p class="pager"><a class="button secondary" rel="next" href="${path}?${query.toString()}">Next</a></p>`;
}

export function selected(on: boolean): SafeHtml | '' {
  return on ? html` selected` : '';
}

export function checked(on: boolean): SafeHtml | '' {
  return on ? html` checked` : '';
}

import type { AppContext } from '../../context.ts';
import { assertUrlAllowed } from '../../delivery/guard.ts';
import { AppError, type FieldError, validationError } from '../../lib/errors.ts';
import { isScope, SCOPES, type Scope } from '../accounts/roles.ts';
import { eventsUrlProblem, httpsUrlProblem, redirectUriErrors } from './urls.ts';

// An app's own fields (name, description, links, redirect URIs, scopes, events URL) and their
// checks: below the manifest, the versions and the service, which all check fields with them.

export interface AppFields {
  name: string;
  description: string;
  homepage_url?: string | null;
  privacy_url?: string | null;
  support_url?: string | null;
  redirect_uris: string[];
  scopes: string[];
}

export type AppPatch = Partial<AppFields> & { events_url?: string | null };

export const LINK_FIELDS = ['homepage_url', 'privacy_url', 'support_url'] as const;

/** Checks every field present in the input; bad input changes nothing. Scopes come back in catalogue order. */
export function checkFields(ctx: AppContext, input: AppPatch): { scopes?: Scope[] } {
  if (input.redirect_uris !== undefined) {
    const errors = redirectUriErrors(input.redirect_uris);
    if (errors.length > 0) {
      throw new AppError('app.invalid_redirect_uri', errors.map((e) => `${e.path} ${e.message}`).join('; '), {
        errors,
      });
    }
  }
  let scopes: Scope[] | undefined;
  if (input.scopes !== undefined) {
    const unknown = input.scopes.filter((scope) => !isScope(scope));
    if (unknown.length > 0 || input.scopes.length === 0) {
      const detail =
        unknown.length > 0 ? `Unknown scope ${unknown.join(', ')}` : 'Ask for at least one scope';
      throw new AppError('app.invalid_scope', detail, {
        errors: [{ path: '/scopes', message: `must list scopes among ${SCOPES.join(', ')}` }],
      });
    }
    scopes = SCOPES.filter((scope) => input.scopes?.includes(scope));
  }
  const errors: FieldError[] = [];
  for (const field of ['name', 'description'] as const) {
    if (input[field] !== undefined && input[field].trim() === '') {
      errors.push({ path: `/${field}`, message: 'must not be empty' });
    }
  }
  for (const field of LINK_FIELDS) {
    const value = input[field];
    const problem = value ? httpsUrlProblem(value) : null;
    if (problem) errors.push({ path: `/${field}`, message: problem });
  }
  if (input.events_url) {
    const problem = eventsUrlProblem(input.events_url, ctx.config.webhookAllowPrivate);
    if (problem?.kind === 'address') {
      throw new AppError('app.events_url_not_allowed', `The events URL ${problem.message}`, {
        errors: [{ path: '/events_url', message: problem.message }],
      });
    }
    if (problem) errors.push({ path: '/events_url', message: problem.message });
  }
  if (errors.length > 0) throw validationError(errors);
  return scopes ? { scopes } : {};
}

/**
 * The events URL passes the webhook endpoints' guard (spec 2.1, issue 8): https, no private,
 * loopback or metadata address, also behind a name; the engine checks again at every connection.
 */
export async function assertEventsUrlAllowed(ctx: AppContext, url: string | null | undefined): Promise<void> {
  if (!url) return;
  try {
    // An app may name its events URL before its DNS is set up: what resolves must be public.
    await assertUrlAllowed(ctx, url, { allowUnresolved: true });
  } catch (error) {
    if (error instanceof AppError && error.code === 'webhook_endpoint.url_not_allowed') {
      throw new AppError('app.events_url_not_allowed', error.message, {
        errors: [{ path: '/events_url', message: error.message }],
      });
    }
    throw error;
  }
}

/** The checks of normalizeAppPatch that need no name resolution; throws as it does. */
export function checkAppFields(ctx: AppContext, patch: AppPatch): AppPatch {
  const { scopes } = checkFields(ctx, patch);
  const normalized: AppPatch = { ...patch, ...(scopes ? { scopes } : {}) };
  if (normalized.name !== undefined) normalized.name = normalized.name.trim();
  if (normalized.description !== undefined) normalized.description = normalized.description.trim();
  // An empty link (a cleared form field) means no link.
  for (const field of [...LINK_FIELDS, 'events_url'] as const) {
    if (normalized[field] === '') normalized[field] = null;
  }
  return normalized;
}

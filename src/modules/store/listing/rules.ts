import { type FieldError, validationError } from '../../../lib/errors.ts';
import type { Scope } from '../../accounts/roles.ts';
import { httpsUrlProblem } from '../../apps/urls.ts';
import { CATEGORY_IDS, isCategory } from './categories.ts';

/** Spec section 8: a scope justification is 20 to 300 characters in the developer's own words. */
export const JUSTIFICATION_MIN = 20;
export const JUSTIFICATION_MAX = 300;
export const TAGLINE_MAX = 120;
export const DESCRIPTION_MAX = 4000;

export interface ScopeJustification {
  scope: string;
  justification: string;
}

/** The listing of spec 2.8, as a submission carries it and the store shows it. */
export interface Listing {
  tagline: string;
  description_en: string;
  description_es: string;
  category: string;
  app_url: string;
  scope_justifications: ScopeJustification[];
}

/** Characters as people count them (code points), around the trimmed text. */
export function characterCount(text: string): number {
  return [...text.trim()].length;
}

export interface JustificationGap {
  scope: string;
  problem: string;
}

/**
 * Every requested scope without a justification of the right length, in the scopes' order. The
 * submission refuses on these, and the scope_justifications_complete check reports them.
 */
export function justificationGaps(
  justifications: readonly ScopeJustification[],
  scopes: readonly string[],
): JustificationGap[] {
  return scopes.flatMap((scope): JustificationGap[] => {
    const given = justifications.find((j) => j.scope === scope);
    if (!given) return [{ scope, problem: `${scope} needs a justification` }];
    const length = characterCount(given.justification);
    if (length < JUSTIFICATION_MIN || length > JUSTIFICATION_MAX) {
      return [
        {
          scope,
          problem: `the justification of ${scope} must be ${JUSTIFICATION_MIN} to ${JUSTIFICATION_MAX} characters (it has ${length})`,
        },
      ];
    }
    return [];
  });
}

function textErrors(listing: Listing, errors: FieldError[]): void {
  const texts = [
    ['tagline', TAGLINE_MAX],
    ['description_en', DESCRIPTION_MAX],
    ['description_es', DESCRIPTION_MAX],
  ] as const;
  for (const [field, max] of texts) {
    const length = characterCount(listing[field]);
    if (length === 0) errors.push({ path: `/listing/${field}`, message: 'must not be empty' });
    else if (length > max)
      errors.push({ path: `/listing/${field}`, message: `is longer than ${max} characters` });
  }
  if (!isCategory(listing.category)) {
    errors.push({ path: '/listing/category', message: `must be one of ${CATEGORY_IDS.join(', ')}` });
  }
  // The store's Install button opens it in people's browsers: https only, never a private exception.
  const urlProblem = httpsUrlProblem(listing.app_url);
  if (urlProblem) errors.push({ path: '/listing/app_url', message: urlProblem });
}

function justificationErrors(listing: Listing, scopes: readonly Scope[], errors: FieldError[]): void {
  const seen = new Set<string>();
  listing.scope_justifications.forEach((entry, i) => {
    const path = `/listing/scope_justifications/${i}`;
    if (!(scopes as readonly string[]).includes(entry.scope)) {
      errors.push({ path: `${path}/scope`, message: `${entry.scope} is not a scope the app requests` });
    } else if (seen.has(entry.scope)) {
      errors.push({ path: `${path}/scope`, message: `${entry.scope} has more than one justification` });
    } else {
      const length = characterCount(entry.justification);
      if (length < JUSTIFICATION_MIN || length > JUSTIFICATION_MAX) {
        errors.push({
          path: `${path}/justification`,
          message: `the justification of ${entry.scope} must be ${JUSTIFICATION_MIN} to ${JUSTIFICATION_MAX} characters (it has ${length})`,
        });
      }
    }
    seen.add(entry.scope);
  });
  for (const scope of scopes) {
    if (!seen.has(scope)) {
      errors.push({
        path: '/listing/scope_justifications',
        message: `${scope} needs a justification of ${JUSTIFICATION_MIN} to ${JUSTIFICATION_MAX} characters`,
      });
    }
  }
}

/**
 * Checks a listing against the scopes the app will request (the proposed ones when the submission
 * proposes new scopes); answers it trimmed, its justifications in the scopes' order.
 */
export function checkListing(listing: Listing, scopes: readonly Scope[]): Listing {
  const errors: FieldError[] = [];
  textErrors(listing, errors);
  justificationErrors(listing, scopes, errors);
  if (errors.length > 0) {
    throw validationError(
      errors,
      `The listing is not complete: ${errors.map((e) => e.message).join('; ')}`.slice(0, 1000),
    );
  }
  return {
    tagline: listing.tagline.trim(),
    description_en: listing.description_en.trim(),
    description_es: listing.description_es.trim(),
    category: listing.category,
    app_url: listing.app_url,
    scope_justifications: scopes.map((scope) => ({
      scope,
      justification: listing.scope_justifications.find((j) => j.scope === scope)?.justification.trim() ?? '',
    })),
  };
}

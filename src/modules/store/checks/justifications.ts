import type { Listing } from '../listing/rules.ts';
import { justificationGaps } from '../listing/rules.ts';
import type { Check, CheckedApp } from './check.ts';

/** scope_justifications_complete: every requested scope has a fitting justification. */
export function justificationCheck(
  app: CheckedApp,
  listing: Pick<Listing, 'scope_justifications'> | null,
): Check {
  const missing = justificationGaps(listing?.scope_justifications ?? [], app.scopes);
  return {
    name: 'scope_justifications_complete',
    passed: missing.length === 0,
    detail: {
      summary:
        missing.length === 0
          ? 'Every requested scope has a justification of 20 to 300 characters.'
          : `Missing or misfit justifications: ${missing.map((m) => m.scope).join(', ')}.`,
      scopes: [...app.scopes],
      missing,
    },
  };
}

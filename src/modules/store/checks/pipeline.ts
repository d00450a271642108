import type { AppContext } from '../../../context.ts';
import type { Listing } from '../listing/rules.ts';
import type { MediaNames } from '../media/images.ts';
import type { Check, CheckedApp } from './check.ts';
import { eventsUrlChecks } from './events-url.ts';
import { justificationCheck } from './justifications.ts';
import { mediaCheck } from './listing-media.ts';

/**
 * The automated checks of spec 6, delivery rule 8, run at submission and on demand: the events URL
 * must refuse a wrongly signed message (4xx) and accept a correctly signed app.uninstalled test
 * message (2xx), and every requested scope needs a justification, and the listing needs its images. Sent through the delivery
 * engine's guarded connection: no redirects, 10 s deadline, first 4 KB of the answer.
 */
export async function runSubmissionChecks(
  ctx: AppContext,
  app: CheckedApp,
  listing: Pick<Listing, 'scope_justifications'> | null,
  media: MediaNames,
): Promise<Check[]> {
  return [
    ...(await eventsUrlChecks(ctx, app)),
    justificationCheck(app, listing),
    await mediaCheck(ctx, app.id, media),
  ];
}

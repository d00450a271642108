import type { AppContext } from '../../../context.ts';
import type { MediaNames } from '../media/images.ts';
import { checkMediaSet } from '../media/service.ts';
import type { Check } from './check.ts';

/** listing_media_valid: an icon and screenshots that pass the upload rules. */
export async function mediaCheck(ctx: AppContext, appId: string, names: MediaNames): Promise<Check> {
  const { problems, items } = await checkMediaSet(ctx, appId, names);
  return {
    name: 'listing_media_valid',
    passed: problems.length === 0,
    detail: {
      summary:
        problems.length === 0
          ? `An icon and ${names.screenshots.length} screenshot${names.screenshots.length === 1 ? '' : 's'}, each PNG or JPEG of the right size, without metadata.`
          : `The listing's images are not complete: ${problems.join('; ')}.`,
      media: items,
      problems,
    },
  };
}

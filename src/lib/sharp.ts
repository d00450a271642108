import type sharpType from 'sharp';

let loading: Promise<typeof sharpType> | null = null;

/**
 * sharp (libvips, about 20 MB of memory once loaded), loaded on the first image a process handles
 * rather than at start: most processes never see one (issue 41 item 4, idle memory). libvips's
 * cache of recent operations (up to 50 MB of pixels by default) is turned off: every image here is
 * a new upload or a demo picture drawn once, so nothing in it is asked for again, and the demo's
 * screenshots stayed in it after the seed.
 */
export function loadSharp(): Promise<typeof sharpType> {
  loading ??= import('sharp').then(({ default: sharp }) => {
    sharp.cache(false);
    return sharp;
  });
  return loading;
}

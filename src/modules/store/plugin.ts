import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { cataloguePages } from './catalogue/pages.ts';
import { catalogueRoutes } from './catalogue/routes.ts';
import { mediaPages } from './media/pages.ts';
import { mediaRoutes } from './media/routes.ts';
import { publicationRoutes } from './publication/routes.ts';
import { ratingPages } from './ratings/pages.ts';
import { ratingRoutes } from './ratings/routes.ts';
import { submissionPages } from './submissions/pages.ts';
import { submissionRoutes } from './submissions/routes.ts';
import { vettingPages } from './vetting/pages.ts';
import { vettingRoutes } from './vetting/routes.ts';

/**
 * The store capability, room by room: submissions and their checks, publication, media, ratings,
 * the reviewers' console (vetting) and the public catalogue. The API's rooms come first, in the
 * order the OpenAPI document lists them; then the pages.
 */
export function storeModule(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(submissionRoutes(ctx));
    await app.register(publicationRoutes(ctx));
    await app.register(mediaRoutes(ctx));
    await app.register(ratingRoutes(ctx));
    await app.register(vettingRoutes(ctx));
    await app.register(catalogueRoutes(ctx));
    await app.register(submissionPages(ctx));
    await app.register(mediaPages(ctx));
    await app.register(vettingPages(ctx));
    await app.register(ratingPages(ctx));
    await app.register(cataloguePages(ctx));
  };
}

import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { storePages } from './catalogue/pages.ts';
import { storeRoutes } from './catalogue/routes.ts';
import { mediaRoutes } from './media/routes.ts';
import { reviewPortalPages } from './ratings/pages.ts';
import { reviewApiRoutes } from './ratings/routes.ts';
import { portalStorePages } from './submissions/pages.ts';
import { developerStoreRoutes } from './submissions/routes.ts';
import { reviewPages } from './vetting/pages.ts';
import { reviewRoutes } from './vetting/routes.ts';

/** The store capability: submissions and checks, review, publication, the App Store, and their pages. */
export function storeModule(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(developerStoreRoutes(ctx));
    await app.register(mediaRoutes(ctx));
    await app.register(reviewApiRoutes(ctx));
    await app.register(reviewRoutes(ctx));
    await app.register(storeRoutes(ctx));
    await app.register(portalStorePages(ctx));
    await app.register(reviewPages(ctx));
    await app.register(reviewPortalPages(ctx));
    await app.register(storePages(ctx));
  };
}

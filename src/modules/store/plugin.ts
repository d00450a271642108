import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { developerStoreRoutes } from './developer-routes.ts';
import { mediaRoutes } from './media-routes.ts';
import { portalStorePages } from './portal-pages.ts';
import { reviewApiRoutes } from './review-api-routes.ts';
import { reviewPages } from './review-pages.ts';
import { reviewPortalPages } from './review-portal-pages.ts';
import { reviewRoutes } from './review-routes.ts';
import { storePages } from './store-pages.ts';
import { storeRoutes } from './store-routes.ts';

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

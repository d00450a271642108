import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { dashboardAppsPage } from './dashboard-apps-page.ts';
import { installLinkPage } from './install-page.ts';
import { installationRoutes } from './installation-routes.ts';
import { ownInstallationRoutes } from './own-installation-routes.ts';
import { portalPages } from './portal-pages.ts';
import { developerRoutes } from './routes.ts';
import { versionRoutes } from './version-routes.ts';

/** The apps capability: developer API, installations API, and their pages. */
export function appsModule(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(developerRoutes(ctx));
    await app.register(versionRoutes(ctx));
    await app.register(ownInstallationRoutes(ctx));
    await app.register(installationRoutes(ctx));
    await app.register(portalPages(ctx));
    await app.register(installLinkPage(ctx));
    await app.register(dashboardAppsPage(ctx));
  };
}

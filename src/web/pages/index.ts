import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { toAppError } from '../../http/errors.ts';
import { memberPages } from '../../modules/accounts/member-pages.ts';
import { tokenPages } from '../../modules/accounts/token-pages.ts';
import { brandingSettingsPages } from '../../modules/recipients/settings-page.ts';
import { eventPages } from '../../modules/shipments/event-pages.ts';
import { shipmentFormPages } from '../../modules/shipments/form-pages.ts';
import { shipmentPages } from '../../modules/shipments/pages.ts';
import { sendErrorPage } from './common.ts';
import { shellPages } from './shell.ts';

/**
 * The dashboard's own pages. Registered as one encapsulated plugin so that its error handler,
 * which answers people with a page instead of problem JSON, applies only here.
 */
export function dashboardPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const known = toAppError(error);
      if (!known || known.status >= 500) request.log.error({ err: error }, 'dashboard page failed');
      return sendErrorPage(request, reply, known);
    });
    shellPages(app, ctx);
    shipmentFormPages(app, ctx);
    shipmentPages(app, ctx);
    eventPages(app, ctx);
    tokenPages(app, ctx);
    memberPages(app, ctx);
    brandingSettingsPages(app, ctx);
  };
}

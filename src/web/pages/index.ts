import type { FastifyError, FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { toAppError } from '../../http/errors.ts';
import { sendErrorPage } from './common.ts';
import { eventPages } from './events.ts';
import { memberPages } from './members.ts';
import { shellPages } from './shell.ts';
import { shipmentFormPages } from './shipment-form.ts';
import { shipmentPages } from './shipments.ts';
import { tokenPages } from './tokens.ts';

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
  };
}

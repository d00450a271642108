import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import helmet from 'helmet';
import { Type } from 'typebox';
import type { AppContext } from './context.ts';
import { registerApiReference } from './http/api-reference.ts';
import { registerBearerAuth } from './http/auth.ts';
import {
  clientErrorHandler,
  expectationHandler,
  frameworkErrors,
  registerErrorHandling,
} from './http/errors.ts';
import { registerIdempotency } from './http/idempotency.ts';
import { parseForm, registerInputGuards } from './http/input.ts';
import { securitySchemes, transformDocument, transformRoute } from './http/openapi.ts';
import { Problem } from './http/schemas.ts';
import { validatorCompiler } from './http/validation.ts';
import { registerVersionHeaders } from './http/version-headers.ts';
import { mailboxPage } from './modules/accounts/mailbox-page.ts';
import { accountsRoutes } from './modules/accounts/routes.ts';
import { appEventPages } from './modules/app-events/portal-pages.ts';
import { appEventRoutes } from './modules/app-events/routes.ts';
import { appsModule } from './modules/apps/plugin.ts';
import { consoleRoutes, registerAppUsageCounting } from './modules/console/routes.ts';
import { inboundPages } from './modules/inbound/pages.ts';
import { inboundReceiveRoutes, inboundSourceRoutes } from './modules/inbound/routes.ts';
import { listenerRoutes } from './modules/listeners/routes.ts';
import { agentConnectionRoutes } from './modules/mcp/connection-routes.ts';
import { agentConnectionsPage } from './modules/mcp/connections-page.ts';
import { mcpRoutes } from './modules/mcp/routes.ts';
import { oauthRoutes } from './modules/oauth/routes.ts';
import { healthRoutes, registerHttpMetrics, registerStartingGate } from './modules/operations/routes.ts';
import { privacyPages } from './modules/privacy/pages.ts';
import { privacyRoutes } from './modules/privacy/routes.ts';
import { logoRoutes } from './modules/recipients/logo-routes.ts';
import { recipientsRoutes } from './modules/recipients/routes.ts';
import { trackingPageRoutes } from './modules/recipients/tracking-page-routes.ts';
import { unsubscribeRoutes } from './modules/recipients/unsubscribe-routes.ts';
import { LATEST_API_VERSION } from './modules/shipments/events.ts';
import { shipmentsRoutes } from './modules/shipments/routes.ts';
import { storeModule } from './modules/store/index.ts';
import { trackingRoutes } from './modules/tracking/routes.ts';
import { webhookGuideRoutes } from './modules/webhooks/guide.ts';
import { addEventCatalogue, documentInVersion } from './modules/webhooks/openapi-webhooks.ts';
import { webhookPages } from './modules/webhooks/pages.ts';
import { webhooksRoutes } from './modules/webhooks/routes.ts';
import { ApiVersionName } from './modules/webhooks/schemas.ts';
import { registerCsrf } from './web/csrf.ts';
import { pageErrorAnswer } from './web/pages/common.ts';
import { webRoutes } from './web/routes.ts';
import { registerCookieNames } from './web/session.ts';

export { type BuildOptions, buildContext } from './services.ts';

/** The composition root: every capability's routes, registered in one place. */
export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.log as FastifyBaseLogger,
    trustProxy: ctx.config.trustProxy.length > 0 ? [...ctx.config.trustProxy] : false,
    bodyLimit: 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    // Refusals that happen before any route or hook runs are problem details too.
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // An Expect header other than 100-continue: problem details, not Node's own empty 417.
  app.server.on('checkExpectation', expectationHandler);

  app.setValidatorCompiler(validatorCompiler);
  app.addSchema(Problem);
  registerErrorHandling(app, pageErrorAnswer);
  registerHttpMetrics(app, ctx);
  registerInputGuards(app);

  // Security headers on every answer. Built once: @fastify/helmet built helmet's middleware, CSP
  // parsing included, on every request (8% of the token endpoint's CPU, issue 10).
  const securityHeaders = helmet({
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
        upgradeInsecureRequests: null,
      },
    },
    frameguard: { action: 'deny' },
    hsts: ctx.config.secureCookies,
    crossOriginEmbedderPolicy: false,
  });
  app.addHook('onRequest', (request, reply, done) =>
    securityHeaders(request.raw, reply.raw, (err?: unknown) => done(err as Error | undefined)),
  );
  // Waybill-Version naming a deprecated version: Deprecation, Sunset and Link on the answer.
  registerVersionHeaders(app, `${ctx.config.baseUrl}/docs/webhooks#versions`);
  registerStartingGate(app, ctx);
  await app.register(rateLimit, { global: false });
  await app.register(formbody, { bodyLimit: 64 * 1024, parser: parseForm });
  await app.register(cookie);
  registerCookieNames(app, ctx);
  await registerCsrf(app, ctx);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Waybill API',
        version: '1.0.0',
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        description:
          'Shipments, webhook endpoints and the app platform of Waybill. Errors are RFC 9457 problem details with a stable `code`.',
      },
      // A variable, not a fixed host: the committed copy (docs/openapi.json) describes every
      // deployment, and each one serves its own WAYBILL_BASE_URL as the default.
      servers: [
        {
          url: '{base_url}',
          description: 'This Waybill',
          variables: {
            base_url: { default: ctx.config.baseUrl, description: 'Its WAYBILL_BASE_URL' },
          },
        },
      ],
      components: { securitySchemes },
    },
    transform: transformRoute,
    transformObject: transformDocument(addEventCatalogue),
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  // `?api_version=`: that version's webhooks (decision 0081); an unknown one is 400 validation.failed,
  // as the event catalogue answers it. Each version's document is built once.
  const documents = new Map<string, unknown>();
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/openapi.json',
    {
      schema: {
        hide: true,
        querystring: Type.Object(
          { api_version: Type.Optional(ApiVersionName) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const version = request.query.api_version;
      if (!version || version === LATEST_API_VERSION) return app.swagger();
      let document = documents.get(version);
      if (!document) {
        document = documentInVersion(app.swagger() as never, version);
        documents.set(version, document);
      }
      return document;
    },
  );
  // Scalar's reference at /docs, its plugin imported by the first request there (decision 0075).
  registerApiReference(
    app,
    { configuration: { title: 'Waybill API reference' } },
    async (_request, reply) => {
      // The reference page is a script bundle of its own; it gets a looser policy than our pages.
      reply.header(
        'content-security-policy',
        "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; frame-ancestors 'none'",
      );
    },
  );

  registerBearerAuth(app, ctx);
  registerIdempotency(app, ctx);
  registerAppUsageCounting(app, ctx);

  await app.register(healthRoutes(ctx));
  await app.register(accountsRoutes(ctx));
  await app.register(shipmentsRoutes(ctx));
  await app.register(trackingRoutes(ctx));
  await app.register(recipientsRoutes(ctx));
  await app.register(trackingPageRoutes(ctx));
  await app.register(logoRoutes(ctx));
  await app.register(unsubscribeRoutes(ctx));
  await app.register(oauthRoutes(ctx));
  await app.register(mcpRoutes(ctx));
  await app.register(agentConnectionRoutes(ctx));
  await app.register(agentConnectionsPage(ctx));
  await app.register(appsModule(ctx));
  await app.register(consoleRoutes(ctx));
  await app.register(appEventRoutes(ctx));
  await app.register(appEventPages(ctx));
  await app.register(privacyRoutes(ctx));
  await app.register(privacyPages(ctx));
  await app.register(storeModule(ctx));
  await app.register(webhooksRoutes(ctx));
  await app.register(listenerRoutes(ctx));
  await app.register(inboundSourceRoutes(ctx));
  await app.register(inboundReceiveRoutes(ctx));
  await app.register(webRoutes(ctx));
  await app.register(mailboxPage(ctx));
  await app.register(webhookPages(ctx));
  await app.register(inboundPages(ctx));
  await app.register(webhookGuideRoutes(ctx));

  return app;
}

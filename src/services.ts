import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import type { DatabaseHandle } from './db/database.ts';
import { newDeliveryHooks } from './delivery/context.ts';
import { registerDeliveryEngine } from './delivery/fanout.ts';
import type { Clock } from './lib/clock.ts';
import { SecretBox } from './lib/crypto.ts';
import { registerAccountTokenResolvers } from './modules/accounts/authenticate.ts';
import { registerUninstalledEvent } from './modules/app-events/uninstalled.ts';
import { AppUsage } from './modules/console/usage.ts';
import { registerOAuth } from './modules/oauth/access-tokens.ts';
import { newHealthState } from './modules/operations/health.ts';
import { WaybillMetrics } from './modules/operations/metrics.ts';
import { registerRecipientNotifications } from './modules/recipients/notify-queue.ts';
import { registerDisabledMail } from './modules/webhooks/disabled-mail.ts';
import { registerOperationalEvents } from './modules/webhooks/operational-events.ts';

/**
 * The services and the hooks between capabilities, without HTTP: a worker-only process builds this
 * and never loads Fastify, the routes, the pages or the API reference (it starts a second sooner).
 */
export interface BuildOptions {
  config: Readonly<Config>;
  database: DatabaseHandle;
  clock: Clock;
  logger: Logger;
}

/** The services' shared context: built once, handed to every module. */
export function buildContext(options: BuildOptions): AppContext {
  const health = newHealthState();
  const ctx: AppContext = {
    config: options.config,
    db: options.database.db,
    database: options.database,
    clock: options.clock,
    log: options.logger,
    secrets: new SecretBox(options.config.secretKey),
    eventSinks: [],
    tokenResolvers: new Map(),
    memberLeftHooks: [],
    afterCommitHooks: [],
    deliveryHooks: newDeliveryHooks(),
    health,
    appUsage: new AppUsage(options.database.db, options.clock, options.logger),
    metrics: new WaybillMetrics({
      db: options.database.db,
      clock: options.clock,
      log: options.logger,
      health,
    }),
  };
  registerAccountTokenResolvers(ctx);
  registerOAuth(ctx);
  registerDeliveryEngine(ctx);
  registerDisabledMail(ctx);
  registerOperationalEvents(ctx);
  registerUninstalledEvent(ctx);
  registerRecipientNotifications(ctx);
  return ctx;
}

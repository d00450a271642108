import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DatabaseHandle, Db } from '../db/database.ts';
import type { Database } from '../db/schema.ts';
import type { Clock } from '../lib/clock.ts';
import type { SecretBox } from '../lib/crypto.ts';
import type { DeliveryMetrics } from './metrics.ts';

export type Trx = Transaction<Database>;

/** Why an endpoint was disabled (CONTRACT.md disabled_reason). */
export type DisabledReason = 'gone' | 'failing' | 'manual';

/**
 * What an attempt's record changed about an endpoint, told once committed: a failing streak that
 * reached 24 hours (once per streak), a disable (410 Gone, or 3 days of failure), and a recovery
 * (a 2xx ending a streak that had been told as failing).
 */
export type EndpointNews =
  | { kind: 'failing'; endpointId: string; failingSince: Date; at: Date }
  | { kind: 'disabled'; endpointId: string; reason: Exclude<DisabledReason, 'manual'>; at: Date }
  | { kind: 'recovered'; endpointId: string; failingSince: Date; at: Date };

/**
 * What the capabilities that use the engine hang on it. The engine calls these and knows nothing
 * of what they do (the webhooks capability e-mails people and sends operational events).
 */
export interface DeliveryHooks {
  /** After the commit that made the news; a hook that throws is logged, never undoes anything. */
  endpointNews: Array<(news: readonly EndpointNews[]) => Promise<void>>;
}

export function newDeliveryHooks(): DeliveryHooks {
  return { endpointNews: [] };
}

/**
 * What the delivery engine needs of the process, and no more: the application's context
 * (src/context.ts) is one, and a benchmark or a test may build its own. The engine imports nothing
 * from src/modules/; the capabilities import it.
 */
export interface DeliveryContext {
  config: Readonly<Pick<Config, 'webUrl' | 'webhookAllowPrivate'>>;
  db: Db;
  database: DatabaseHandle;
  clock: Clock;
  log: Logger;
  secrets: SecretBox;
  /** Resolves a host name to its addresses (the URL guard); tests inject their own. Default: DNS. */
  resolveHost?: (hostname: string) => Promise<string[]>;
  metrics: DeliveryMetrics;
  /** The worker's heartbeat, read by readiness. */
  health: { workerHeartbeat: (() => Date | null) | null };
  deliveryHooks: DeliveryHooks;
}

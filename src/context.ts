import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { DatabaseHandle, Db } from './db/database.ts';
import type { DeliveryContext, DeliveryHooks, Trx } from './delivery/context.ts';
import type { EventSink } from './delivery/fanout.ts';
import type { Clock } from './lib/clock.ts';
import type { SecretBox } from './lib/crypto.ts';
import type { SecretPrefix } from './lib/ids.ts';
import type { Principal } from './modules/accounts/access.ts';
import type { AppUsage } from './modules/console/usage.ts';
import type { HealthState } from './modules/operations/health.ts';
import type { WaybillMetrics } from './modules/operations/metrics.ts';

// The engine's types, where the capabilities have always found them.
export type { Trx } from './delivery/context.ts';
export type { EventSink, StoredEvent } from './delivery/fanout.ts';

export type TokenResolver = (ctx: AppContext, secret: string) => Promise<Principal | null>;

/** Called in the transaction that removes a person from a company (the oauth module withholds their grants). */
export type MemberLeftHook = (
  trx: Trx,
  left: { tenantId: string; userId: string; at: Date },
) => Promise<void>;

/**
 * What services need, built once by the composition root (src/app.ts). Services take this and
 * plain values; they never see Fastify.
 */
export interface AppContext extends DeliveryContext {
  config: Readonly<Config>;
  db: Db;
  database: DatabaseHandle;
  clock: Clock;
  log: Logger;
  secrets: SecretBox;
  /** Called in the same transaction as the event rows (the webhooks module fans out here). */
  eventSinks: EventSink[];
  /** Bearer token resolvers by prefix; modules add theirs (accounts: ust_, sk_; oauth: atk_live_). */
  tokenResolvers: Map<SecretPrefix, TokenResolver>;
  /** What other modules do when a person leaves a company, in the same transaction (accounts calls them). */
  memberLeftHooks: MemberLeftHook[];
  /** Called after a commit that made work for the delivery worker. */
  afterCommitHooks: Array<() => void>;
  /** Resolves a host name to its addresses (the webhook URL guard); tests inject their own. Default: DNS. */
  resolveHost?: (hostname: string) => Promise<string[]>;
  /** Extra certificate authorities for outgoing https (tests serving metadata documents on loopback). */
  outboundCa?: string;
  /** What the capabilities hang on the delivery engine (the e-mail when an endpoint is disabled). */
  deliveryHooks: DeliveryHooks;
  /** This context's Prometheus metrics (docs/operations.md); the engine and the HTTP hook feed them. */
  metrics: WaybillMetrics;
  /** What /readyz reads besides the database: shutting down, the worker's heartbeat. */
  health: HealthState;
  /** What each app does (its API calls, its token grants), counted in memory and added in batches. */
  appUsage: AppUsage;
}

export function runAfterCommit(ctx: AppContext): void {
  for (const hook of ctx.afterCommitHooks) hook();
}

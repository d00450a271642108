import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { DatabaseHandle, Db } from './db/database.ts';
import type { Database } from './db/schema.ts';
import type { Clock } from './lib/clock.ts';
import type { SecretBox } from './lib/crypto.ts';
import type { SecretPrefix } from './lib/ids.ts';
import type { Principal } from './modules/accounts/access.ts';
import type { HealthState } from './modules/operations/health.ts';
import type { WaybillMetrics } from './modules/operations/metrics.ts';

export type Trx = Transaction<Database>;

/** A stored event, handed to whoever fans events out, inside the transaction that wrote it. */
export interface StoredEvent {
  id: string;
  type: string;
  tenantId: string;
  livemode: boolean;
  customerAccountId: string | null;
  /** Set for app events: the installation the event concerns. */
  installationId?: string | null;
  payload: string;
  createdAt: Date;
}

export type EventSink = (trx: Trx, events: readonly StoredEvent[]) => Promise<void>;

export type TokenResolver = (ctx: AppContext, secret: string) => Promise<Principal | null>;

/**
 * What services need, built once by the composition root (src/app.ts). Services take this and
 * plain values; they never see Fastify.
 */
export interface AppContext {
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
  /** Called after a commit that made work for the delivery worker. */
  afterCommitHooks: Array<() => void>;
  /** Resolves a host name to its addresses (the webhook URL guard); tests inject their own. Default: DNS. */
  resolveHost?: (hostname: string) => Promise<string[]>;
  /** This context's Prometheus metrics (docs/operations.md); the engine and the HTTP hook feed them. */
  metrics: WaybillMetrics;
  /** What /readyz reads besides the database: shutting down, the worker's heartbeat. */
  health: HealthState;
}

export function runAfterCommit(ctx: AppContext): void {
  for (const hook of ctx.afterCommitHooks) hook();
}

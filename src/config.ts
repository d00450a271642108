import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ipaddr from 'ipaddr.js';

/**
 * Configuration, read once from the environment at start, checked, and frozen.
 * Nothing else reads process.env (STYLE.md 8). Every key is documented in CONTRACT.md and README.md.
 */
export interface Config {
  port: number;
  host: string;
  database: { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string | null };
  baseUrl: string;
  webUrl: string;
  secretKey: Buffer;
  smtpUrl: string | null;
  reviewerEmails: ReadonlySet<string>;
  /** Whether the reviewer the demo seeded is a reviewer: the demo is on and no reviewers are named. */
  demoReviewer: boolean;
  webhookAllowPrivate: readonly string[];
  /** Requests per minute to /oauth/token and /oauth/revoke, per client and per address. */
  oauthRateLimit: number;
  /** Sign-in requests a minute per client address and e-mail (WAYBILL_SIGN_IN_RATE_LIMIT). */
  signInRateLimit: number;
  /** Public tracking page requests a minute per client address (WAYBILL_TRACKING_PAGE_RATE_LIMIT). */
  trackingPageRateLimit: number;
  /** How long a delivery worker's claim lasts (WAYBILL_WEBHOOK_LEASE_SECONDS); outlasts the 10 s deadline. */
  webhookLeaseMs: number;
  /** Seed the demo on an empty database at start; on by default only for the embedded engine. */
  demo: boolean;
  logLevel: string;
  /** WAYBILL_LOG_FORMAT: `json`, `pretty` (lines for people), or null: pretty on a terminal, else JSON. */
  logFormat: 'json' | 'pretty' | null;
  /** Development conveniences are on when the web address is plain http on localhost. */
  secureCookies: boolean;
  /** Addresses or CIDRs of reverse proxies whose X-Forwarded-For is believed. */
  trustProxy: readonly string[];
  /** WAYBILL_METRICS_PORT: the separate listener of /metrics (and /healthz, /readyz); null: none. */
  metricsPort: number | null;
  /**
   * WAYBILL_SHUTDOWN_DELAY_SECONDS: after SIGTERM, how long /readyz answers 503 while the process
   * still serves, so that load balancers stop sending before the listener closes.
   */
  shutdownDelayMs: number;
}

export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

function originOf(name: string, value: string, problems: string[]): string {
  try {
    const url = new URL(value);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('scheme');
    if (url.search || url.hash || url.username || url.password) throw new Error('extra parts');
    // The OAuth issuer has no trailing slash (RFC 8414 section 2, RFC 9207).
    return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
  } catch {
    problems.push(`${name} must be an http(s) URL without query, fragment or credentials (got "${value}")`);
    return '';
  }
}

function secretKeyFor(env: Env, database: Config['database'], problems: string[]): Buffer {
  const raw = env.WAYBILL_SECRET_KEY;
  if (raw) {
    const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
    if (key.length !== 32) {
      problems.push('WAYBILL_SECRET_KEY must be 32 bytes, as 64 hex characters or base64');
    }
    return key;
  }
  if (database.kind === 'postgres') {
    problems.push(
      'WAYBILL_SECRET_KEY is required with PostgreSQL (32 bytes as hex or base64: openssl rand -hex 32)',
    );
    return Buffer.alloc(32);
  }
  if (database.dataDir === null) return randomBytes(32);
  // The embedded engine keeps its key beside its data, created once.
  const keyFile = join(database.dataDir, '..', 'secret.key');
  if (!existsSync(keyFile)) {
    mkdirSync(join(database.dataDir, '..'), { recursive: true });
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  }
  return Buffer.from(readFileSync(keyFile, 'utf8').trim(), 'hex');
}

/**
 * `listeningPort`: the port the server really got when PORT is 0, so that the default public
 * addresses (the OAuth issuer among them) name it; main.ts reloads the configuration with it.
 */
export function loadConfig(env: Env = process.env, listeningPort?: number): Readonly<Config> {
  const problems: string[] = [];

  const portText = listeningPort === undefined ? (env.PORT ?? '3000') : String(listeningPort);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535)
    problems.push(`PORT must be a port number 0-65535 (got "${portText}")`);
  const host = env.HOST || '127.0.0.1';

  const dbUrl = env.WAYBILL_DATABASE_URL || './data/pglite';
  let database: Config['database'];
  if (/^postgres(ql)?:\/\//.test(dbUrl)) database = { kind: 'postgres', url: dbUrl };
  else if (dbUrl === 'memory:') database = { kind: 'pglite', dataDir: null };
  else if (dbUrl.includes('://')) {
    problems.push(`WAYBILL_DATABASE_URL must be postgres://..., a folder path, or memory: (got "${dbUrl}")`);
    database = { kind: 'pglite', dataDir: null };
  } else database = { kind: 'pglite', dataDir: resolve(dbUrl) };

  const baseUrl = originOf('WAYBILL_BASE_URL', env.WAYBILL_BASE_URL || `http://localhost:${port}`, problems);
  const webUrl = originOf(
    'WAYBILL_WEB_URL',
    env.WAYBILL_WEB_URL || baseUrl || `http://localhost:${port}`,
    problems,
  );

  // The demo's accounts share a published password: on by default only on the embedded engine,
  // which is for trying Waybill out; PostgreSQL gets it only when asked for.
  const demoText = env.WAYBILL_DEMO ?? (database.kind === 'pglite' ? '1' : '0');
  if (!['0', '1'].includes(demoText)) problems.push(`WAYBILL_DEMO must be 0 or 1 (got "${demoText}")`);
  // The demo's reviewer (marked in the database by the seed) is a reviewer unless reviewers are named.
  const demoReviewer = demoText === '1' && env.WAYBILL_REVIEWER_EMAILS === undefined;
  const reviewerList = env.WAYBILL_REVIEWER_EMAILS ?? '';
  const reviewerEmails = new Set(
    reviewerList
      .split(',')
      .map((e) => e.trim().toLowerCase())
      .filter(Boolean),
  );

  const logFormat = env.WAYBILL_LOG_FORMAT || null;
  if (logFormat !== null && logFormat !== 'json' && logFormat !== 'pretty')
    problems.push(`WAYBILL_LOG_FORMAT must be json or pretty (got "${logFormat}")`);

  const webhookAllowPrivate = (env.WAYBILL_WEBHOOK_ALLOW_PRIVATE ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  for (const cidr of webhookAllowPrivate) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      problems.push(`WAYBILL_WEBHOOK_ALLOW_PRIVATE must list CIDRs such as 127.0.0.1/32 (got "${cidr}")`);
    }
  }

  const trustProxy = (env.WAYBILL_TRUST_PROXY ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of trustProxy) {
    if (!ipaddr.isValid(entry.split('/')[0] ?? '')) {
      problems.push(
        `WAYBILL_TRUST_PROXY must list proxy addresses or CIDRs such as 10.0.0.0/8 (got "${entry}")`,
      );
    }
  }

  const leaseText = env.WAYBILL_WEBHOOK_LEASE_SECONDS ?? '60';
  const webhookLeaseMs = Number(leaseText) * 1000;
  if (!/^\d+$/.test(leaseText) || webhookLeaseMs <= 10_000)
    problems.push(`WAYBILL_WEBHOOK_LEASE_SECONDS must be a whole number above 10 (got "${leaseText}")`);

  const smtpUrl = env.WAYBILL_SMTP_URL || null;
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl))
    problems.push(`WAYBILL_SMTP_URL must be smtp:// or smtps:// (got "${smtpUrl}")`);

  const signInRateText = env.WAYBILL_SIGN_IN_RATE_LIMIT ?? '10';
  const signInRateLimit = Number(signInRateText);
  if (!/^\d+$/.test(signInRateText) || signInRateLimit < 1)
    problems.push(`WAYBILL_SIGN_IN_RATE_LIMIT must be a positive whole number (got "${signInRateText}")`);
  const trackingRateText = env.WAYBILL_TRACKING_PAGE_RATE_LIMIT ?? '60';
  const trackingPageRateLimit = Number(trackingRateText);
  if (!/^\d+$/.test(trackingRateText) || trackingPageRateLimit < 1)
    problems.push(
      `WAYBILL_TRACKING_PAGE_RATE_LIMIT must be a positive whole number (got "${trackingRateText}")`,
    );
  const oauthRateText = env.WAYBILL_OAUTH_RATE_LIMIT ?? '300';
  const oauthRateLimit = Number(oauthRateText);
  if (!/^\d+$/.test(oauthRateText) || oauthRateLimit < 1)
    problems.push(`WAYBILL_OAUTH_RATE_LIMIT must be a positive whole number (got "${oauthRateText}")`);

  const metricsText = env.WAYBILL_METRICS_PORT || null;
  const metricsPort = metricsText === null ? null : Number(metricsText);
  if (metricsText !== null && (!/^\d+$/.test(metricsText) || Number(metricsText) > 65535))
    problems.push(`WAYBILL_METRICS_PORT must be a port number 0-65535 (got "${metricsText}")`);
  else if (metricsPort !== null && metricsPort !== 0 && metricsPort === port)
    problems.push('WAYBILL_METRICS_PORT must differ from PORT: metrics are never served on the public port');

  const delayText = env.WAYBILL_SHUTDOWN_DELAY_SECONDS ?? '0';
  const shutdownDelayMs = Number(delayText) * 1000;
  if (!/^\d+$/.test(delayText) || shutdownDelayMs > 300_000)
    problems.push(`WAYBILL_SHUTDOWN_DELAY_SECONDS must be a whole number 0-300 (got "${delayText}")`);

  const secretKey = secretKeyFor(env, database, problems);
  if (problems.length > 0) throw new ConfigError(problems);

  return Object.freeze({
    port,
    host,
    database,
    baseUrl,
    webUrl,
    secretKey,
    smtpUrl,
    reviewerEmails,
    demoReviewer,
    webhookAllowPrivate: Object.freeze(webhookAllowPrivate),
    oauthRateLimit,
    signInRateLimit,
    trackingPageRateLimit,
    webhookLeaseMs,
    demo: demoText === '1',
    logLevel: env.WAYBILL_LOG_LEVEL || 'info',
    logFormat: logFormat as Config['logFormat'],
    secureCookies: webUrl.startsWith('https://'),
    trustProxy: Object.freeze(trustProxy),
    metricsPort,
    shutdownDelayMs,
  });
}

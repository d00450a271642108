import pg from 'pg';
import pino from 'pino';
import { buildApp, buildContext } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { systemClock } from '../src/lib/clock.ts';
import { hashSecret, newId, newSecret, newTenantId, randomBase62 } from '../src/lib/ids.ts';

/** What the benchmark needs of either server: where it is, its client, and pre-minted grants. */
export interface TokenServer {
  url: string;
  tokenPath: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  mintCodes(n: number, challenge: string): Promise<string[]>;
  mintRefreshTokens(n: number): Promise<string[]>;
  close(): Promise<void>;
}

const SCOPES = JSON.stringify(['shipments:read', 'shipments:write']);

/** Waybill on PGlite (memory) or on PostgreSQL in a schema of its own, with one installed app. */
export async function startWaybillSide(port: number, postgresUrl: string | undefined): Promise<TokenServer> {
  let schema: string | null = null;
  if (postgresUrl) {
    schema = `bench_${randomBase62(10).toLowerCase()}`;
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
  }
  const config = loadConfig({
    PORT: String(port),
    WAYBILL_DATABASE_URL: postgresUrl ?? 'memory:',
    WAYBILL_SECRET_KEY: '11'.repeat(32),
    WAYBILL_DEMO: '0',
    // The benchmark is one client at one address sending thousands of requests a second.
    WAYBILL_OAUTH_RATE_LIMIT: '100000000',
  });
  const database = await openDatabase(config, schema ? { schema } : {});
  await migrateToLatest(database.db);
  const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'silent' }) });
  const app = await buildApp(ctx);
  await app.listen({ port, host: '127.0.0.1' });

  const now = new Date();
  const later = new Date(now.getTime() + 3600_000);
  const userId = newId('usr');
  const tenantId = newTenantId();
  const clientId = newId('app');
  const clientSecret = newSecret('aps_');
  const installationId = newId('inst');
  const redirectUri = 'http://127.0.0.1:8765/callback';
  const db = ctx.db;
  await db
    .insertInto('users')
    .values({
      id: userId,
      email: 'bench@example.test',
      name: 'Bench',
      password_hash: 'x',
      demo_reviewer: false,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('companies')
    .values({ id: tenantId, name: 'Bench', live: true, created_at: now, updated_at: now })
    .execute();
  await db
    .insertInto('memberships')
    .values({
      id: newId('mem'),
      tenant_id: tenantId,
      user_id: userId,
      role: 'owner',
      customer_account_id: null,
      created_at: now,
    })
    .execute();
  await db
    .insertInto('apps')
    .values({
      id: clientId,
      developer_id: userId,
      name: 'Bench app',
      description: 'Benchmark',
      homepage_url: null,
      privacy_url: null,
      support_url: null,
      redirect_uris: JSON.stringify([redirectUri]),
      scopes: SCOPES,
      kind: 'confidential',
      client_secret_hash: hashSecret(clientSecret),
      events_url: null,
      events_secret_sealed: ctx.secrets.seal('whsec_bench'),
      events_previous_secret_sealed: null,
      events_previous_secret_expires_at: null,
      status: 'private',
      created_at: now,
      updated_at: now,
    })
    .execute();
  await db
    .insertInto('installations')
    .values({
      id: installationId,
      app_id: clientId,
      tenant_id: tenantId,
      customer_account_id: null,
      user_id: userId,
      scopes: SCOPES,
      approved_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();

  /** Inserts in batches; codes get an hour instead of 60 s so minting thousands does not expire them. */
  async function mint<T>(
    n: number,
    row: (secret: string) => T,
    prefix: 'atc_' | 'atr_',
    table: 'oauth_codes' | 'oauth_tokens',
  ) {
    const secrets = Array.from({ length: n }, () => newSecret(prefix));
    for (let i = 0; i < n; i += 500) {
      await db
        .insertInto(table)
        // biome-ignore lint/suspicious/noExplicitAny: one helper inserts into either table.
        .values(secrets.slice(i, i + 500).map(row) as any)
        .execute();
    }
    return secrets;
  }

  return {
    url: config.baseUrl,
    tokenPath: '/oauth/token',
    clientId,
    clientSecret,
    redirectUri,
    mintCodes: (n, challenge) =>
      mint(
        n,
        (code) => ({
          code_hash: hashSecret(code),
          app_id: clientId,
          installation_id: installationId,
          tenant_id: tenantId,
          user_id: userId,
          redirect_uri: redirectUri,
          code_challenge: challenge,
          scopes: SCOPES,
          created_at: now,
          expires_at: later,
          used_at: null,
        }),
        'atc_',
        'oauth_codes',
      ),
    mintRefreshTokens: (n) =>
      mint(
        n,
        (token) => ({
          id: newId('grt'),
          token_hash: hashSecret(token),
          kind: 'refresh',
          app_id: clientId,
          installation_id: installationId,
          tenant_id: tenantId,
          user_id: userId,
          scopes: SCOPES,
          created_at: now,
          expires_at: new Date(now.getTime() + 30 * 86400_000),
          used_at: null,
          revoked_at: null,
        }),
        'atr_',
        'oauth_tokens',
      ),
    async close() {
      await app.close();
      await database.close();
      if (schema && postgresUrl) {
        const admin = new pg.Client({ connectionString: postgresUrl });
        await admin.connect();
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      }
    },
  };
}

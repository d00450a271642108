import { createServer, type Server } from 'node:http';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';
import pg from 'pg';
import { randomBase62 } from '../src/lib/ids.ts';
import type { TokenServer } from './waybill-side.ts';

/** An unbounded in-memory store (the built-in one is an LRU of 1000 entries, too small to pre-mint). */
function mapAdapter(): new (name: string) => Adapter {
  const store = new Map<string, AdapterPayload>();
  return class MapAdapter implements Adapter {
    name: string;
    constructor(name: string) {
      this.name = name;
    }
    key(id: string) {
      return `${this.name}:${id}`;
    }
    async upsert(id: string, payload: AdapterPayload) {
      store.set(this.key(id), payload);
    }
    async find(id: string) {
      return store.get(this.key(id));
    }
    async findByUserCode() {
      return undefined;
    }
    async findByUid() {
      return undefined;
    }
    async consume(id: string) {
      const payload = store.get(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.key(id));
    }
    async revokeByGrantId() {}
  };
}

interface PayloadRow {
  id: string;
  type: string;
  payload: AdapterPayload;
  expiresIn: number;
}

/**
 * A PostgreSQL adapter as a production deployment of node-oidc-provider would write one: one table
 * for every model, each write its own committed statement (autocommit; synchronous_commit as the
 * server has it, on by default). `minting.rows` is for pre-minting only: while it is set, upserts are
 * collected and written in multi-row inserts, so that minting 10,000 codes takes seconds.
 */
export const OIDC_TABLE = `
  CREATE TABLE oidc_payloads (
    id text NOT NULL,
    type text NOT NULL,
    payload jsonb NOT NULL,
    grant_id text,
    user_code text,
    uid text,
    expires_at timestamptz,
    consumed_at timestamptz,
    PRIMARY KEY (id, type)
  );
  CREATE INDEX oidc_payloads_grant_id ON oidc_payloads (grant_id);
  CREATE INDEX oidc_payloads_user_code ON oidc_payloads (user_code) WHERE user_code IS NOT NULL;
  CREATE INDEX oidc_payloads_uid ON oidc_payloads (uid) WHERE uid IS NOT NULL;
  CREATE INDEX oidc_payloads_expires_at ON oidc_payloads (expires_at);`;

function postgresAdapter(
  pool: pg.Pool,
  minting: { rows: PayloadRow[] | null },
): { adapter: new (name: string) => Adapter; write(rows: PayloadRow[]): Promise<void> } {
  const UPSERT = `
    INSERT INTO oidc_payloads (id, type, payload, grant_id, user_code, uid, expires_at)
    SELECT id, type, payload, grant_id, user_code, uid, now() + make_interval(secs => expires_in)
      FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::text[], $6::text[], $7::int[])
        AS r(id, type, payload, grant_id, user_code, uid, expires_in)
    ON CONFLICT (id, type) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
      user_code = excluded.user_code, uid = excluded.uid, expires_at = excluded.expires_at`;
  async function write(rows: PayloadRow[]) {
    const text = (key: string) => rows.map((r) => (r.payload[key] as string | undefined) ?? null);
    await pool.query(UPSERT, [
      rows.map((r) => r.id),
      rows.map((r) => r.type),
      rows.map((r) => JSON.stringify(r.payload)),
      text('grantId'),
      text('userCode'),
      text('uid'),
      rows.map((r) => (r.expiresIn ? Math.ceil(r.expiresIn) : null)),
    ]);
  }
  const found = (row: { payload: AdapterPayload; consumed_at: Date | null } | undefined) =>
    row
      ? {
          ...row.payload,
          ...(row.consumed_at ? { consumed: Math.floor(row.consumed_at.getTime() / 1000) } : {}),
        }
      : undefined;
  const FIND = `SELECT payload, consumed_at FROM oidc_payloads
    WHERE %COLUMN% = $1 AND type = $2 AND (expires_at IS NULL OR expires_at > now())`;
  class PostgresAdapter implements Adapter {
    name: string;
    constructor(name: string) {
      this.name = name;
    }
    async upsert(id: string, payload: AdapterPayload, expiresIn: number) {
      const row = { id, type: this.name, payload, expiresIn };
      if (minting.rows) minting.rows.push(row);
      else await write([row]);
    }
    private async findBy(column: 'id' | 'uid' | 'user_code', value: string) {
      const { rows } = await pool.query(FIND.replace('%COLUMN%', column), [value, this.name]);
      return found(rows[0]);
    }
    find(id: string) {
      return this.findBy('id', id);
    }
    findByUserCode(code: string) {
      return this.findBy('user_code', code);
    }
    findByUid(uid: string) {
      return this.findBy('uid', uid);
    }
    async consume(id: string) {
      await pool.query('UPDATE oidc_payloads SET consumed_at = now() WHERE id = $1 AND type = $2', [
        id,
        this.name,
      ]);
    }
    async destroy(id: string) {
      await pool.query('DELETE FROM oidc_payloads WHERE id = $1 AND type = $2', [id, this.name]);
    }
    async revokeByGrantId(grantId: string) {
      await pool.query('DELETE FROM oidc_payloads WHERE grant_id = $1', [grantId]);
    }
  }
  return { adapter: PostgresAdapter, write };
}

export interface TheirSide extends TokenServer {
  metadataPath: string;
}

/**
 * node-oidc-provider with a client comparable to ours: confidential (client_secret_basic), PKCE
 * required (S256), refresh tokens rotated on every use, opaque tokens, no id_token (no openid scope).
 */
export async function startOidcProvider(port: number, postgresUrl?: string): Promise<TheirSide> {
  const url = `http://localhost:${port}`;
  // On PostgreSQL: a throwaway schema and a pool of 10, as Waybill's side has.
  let pool: pg.Pool | null = null;
  let schema: string | null = null;
  const minting: { rows: PayloadRow[] | null } = { rows: null };
  if (postgresUrl) {
    schema = `bench_oidc_${randomBase62(8).toLowerCase()}`;
    pool = new pg.Pool({ connectionString: postgresUrl, max: 10, options: `-c search_path=${schema}` });
    pool.on('error', () => {});
    await pool.query(`CREATE SCHEMA ${schema}`);
    try {
      await pool.query(OIDC_TABLE);
    } catch (error) {
      await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      await pool.end();
      throw error;
    }
  }
  const onPostgres = pool ? postgresAdapter(pool, minting) : null;
  /** Runs `mint` with upserts collected, then writes them in batches (pre-minting only). */
  async function batched<T>(mint: () => Promise<T>): Promise<T> {
    if (!onPostgres) return mint();
    minting.rows = [];
    const result = await mint();
    const rows = minting.rows;
    minting.rows = null;
    for (let i = 0; i < rows.length; i += 1000) await onPostgres.write(rows.slice(i, i + 1000));
    return result;
  }
  const client = {
    client_id: 'bench-client',
    client_secret: 'bench-secret-bench-secret-bench-secret',
    redirect_uris: ['http://127.0.0.1:8765/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  };
  const provider = new Provider(url, {
    adapter: onPostgres?.adapter ?? mapAdapter(),
    clients: [client],
    scopes: ['shipments:read', 'shipments:write'],
    pkce: { required: () => true },
    rotateRefreshToken: true,
    issueRefreshToken: async () => true,
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
    ttl: { AccessToken: 3600, AuthorizationCode: 600, RefreshToken: 30 * 86400, Grant: 30 * 86400 },
  });
  provider.on('server_error', (_ctx: unknown, error: unknown) => console.error('oidc-provider error', error));
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const registered = await provider.Client.find(client.client_id);
  if (!registered) throw new Error('client missing');

  async function grantId(): Promise<string> {
    const grant = new provider.Grant({ accountId: 'usr_bench', clientId: client.client_id });
    grant.addOIDCScope('shipments:read shipments:write');
    return grant.save();
  }
  const shared = await grantId();
  return {
    url,
    tokenPath: '/token',
    metadataPath: '/.well-known/openid-configuration',
    clientId: client.client_id,
    clientSecret: client.client_secret,
    redirectUri: client.redirect_uris[0] as string,
    mintCodes: (n, challenge) =>
      batched(async () => {
        const codes: string[] = [];
        for (let i = 0; i < n; i += 1) {
          const code = new provider.AuthorizationCode({
            accountId: 'usr_bench',
            grantId: shared,
            client: registered,
            redirectUri: client.redirect_uris[0],
            scope: 'shipments:read shipments:write',
            codeChallenge: challenge,
            codeChallengeMethod: 'S256',
          });
          codes.push(await code.save());
        }
        return codes;
      }),
    mintRefreshTokens: (n) =>
      batched(async () => {
        const tokens: string[] = [];
        for (let i = 0; i < n; i += 1) {
          const token = new provider.RefreshToken({
            accountId: 'usr_bench',
            grantId: shared,
            client: registered,
            scope: 'shipments:read shipments:write',
            gty: 'authorization_code',
          });
          tokens.push(await token.save());
        }
        return tokens;
      }),
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (pool) {
        await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
        await pool.end();
      }
    },
  };
}

import { createServer, type Server } from 'node:http';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';
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

export interface TheirSide extends TokenServer {
  metadataPath: string;
}

/**
 * node-oidc-provider with a client comparable to ours: confidential (client_secret_basic), PKCE
 * required (S256), refresh tokens rotated on every use, opaque tokens, no id_token (no openid scope).
 */
export async function startOidcProvider(port: number): Promise<TheirSide> {
  const url = `http://localhost:${port}`;
  const client = {
    client_id: 'bench-client',
    client_secret: 'bench-secret-bench-secret-bench-secret',
    redirect_uris: ['http://127.0.0.1:8765/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  };
  const provider = new Provider(url, {
    adapter: mapAdapter(),
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
    async mintCodes(n, challenge) {
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
    },
    async mintRefreshTokens(n) {
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
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

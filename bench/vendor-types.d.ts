// Minimal types for the two benchmark-only packages that ship none (only what bench/oauth.ts uses).

declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export type AdapterPayload = Record<string, unknown> & { consumed?: number };
  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUserCode(code: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }
  interface Saved {
    save(): Promise<string>;
  }
  interface GrantModel extends Saved {
    addOIDCScope(scope: string): void;
  }
  type Ctor<T> = new (values: Record<string, unknown>) => T;

  // biome-ignore lint/style/noDefaultExport: the package's own shape.
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): void;
    Client: { find(id: string): Promise<unknown> };
    Grant: Ctor<GrantModel>;
    AuthorizationCode: Ctor<Saved>;
    RefreshToken: Ctor<Saved>;
  }
}

declare module 'autocannon' {
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: Request) => Request;
    onResponse?: (status: number, body: string) => void;
  }
  interface Options {
    url: string;
    connections?: number;
    amount?: number;
    duration?: number;
    pipelining?: number;
    requests?: Request[];
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  interface Result {
    duration: number;
    requests: { total: number; average: number };
    non2xx: number;
    errors: number;
    timeouts: number;
    '2xx': number;
    latency: { p50: number; p99: number; average: number };
  }
  function autocannon(options: Options): Promise<Result>;
  // biome-ignore lint/style/noDefaultExport: the package's own shape.
  export default autocannon;
}

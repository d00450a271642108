#!/usr/bin/env node
// One benchmarked server in a process of its own, so the load driver never shares its event loop.
// The parent (bench/oauth.ts) asks over IPC for pre-minted grants and for the server to stop.
import { startOidcProvider } from './oidc-provider-side.ts';
import { startWaybillSide, type TokenServer } from './waybill-side.ts';

type Request =
  | { id: number; cmd: 'mintCodes'; n: number; challenge: string }
  | { id: number; cmd: 'mintRefreshTokens'; n: number }
  | { id: number; cmd: 'close' };

const [which, portText, postgresUrl] = process.argv.slice(2);
const port = Number(portText);
// oidc-provider: in memory; oidc-provider-pg: on PostgreSQL at postgresUrl (bench/oidc-provider-side.ts).
const side: TokenServer & { metadataPath?: string } =
  which === 'waybill'
    ? await startWaybillSide(port, postgresUrl || undefined)
    : await startOidcProvider(port, which === 'oidc-provider-pg' ? postgresUrl : undefined);

const send = (message: unknown) => process.send?.(message);
// A parent that died (an error in the driver) must not leave this server running.
process.on('disconnect', () => process.exit(0));
send({
  ready: true,
  url: side.url,
  tokenPath: side.tokenPath,
  metadataPath: side.metadataPath ?? '/.well-known/oauth-authorization-server',
  clientId: side.clientId,
  clientSecret: side.clientSecret,
  redirectUri: side.redirectUri,
});

process.on('message', async (request: Request) => {
  try {
    if (request.cmd === 'mintCodes')
      send({ id: request.id, result: await side.mintCodes(request.n, request.challenge) });
    else if (request.cmd === 'mintRefreshTokens')
      send({ id: request.id, result: await side.mintRefreshTokens(request.n) });
    else {
      await side.close();
      // Exit once the answer is out: an exit right after send() can drop it, and the driver would wait forever.
      process.send?.({ id: request.id, result: null }, () => process.exit(0));
    }
  } catch (error) {
    send({ id: request.id, error: String(error) });
  }
});

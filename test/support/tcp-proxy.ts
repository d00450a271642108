import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP proxy of the test's own between Waybill and PostgreSQL, that a test cuts and restores. */
export interface TcpProxy {
  port: number;
  /** Drops every connection (idle and mid-query) and refuses new ones until restored. */
  cut(): void;
  /**
   * Drops every connection and answers new ones as a PostgreSQL that is starting up does:
   * FATAL 57P03 "the database system is starting up", then the connection closes.
   */
  startingUp(): void;
  restore(): void;
  close(): Promise<void>;
}

/** A PostgreSQL ErrorResponse message (protocol 3.0): the first thing a server refusing a start sends. */
function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', code],
      ['M', message],
    ].map(([type, value]) => Buffer.from(`${type}${value}\0`)),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([header, fields]);
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let state: 'open' | 'cut' | 'starting' = 'open';
  const server: Server = createServer((client) => {
    if (state !== 'open') {
      client.on('error', () => {});
      if (state === 'cut') {
        client.destroy();
        return;
      }
      // Read what the client sends (its startup message), or its end would never be seen.
      client.resume();
      client.end(errorResponse('57P03', 'the database system is starting up'));
      return;
    }
    const upstream = connect(targetPort, targetHost);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dropAll = () => {
    for (const socket of sockets) socket.resetAndDestroy();
  };
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      state = 'cut';
      dropAll();
    },
    startingUp() {
      state = 'starting';
      dropAll();
    },
    restore() {
      state = 'open';
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

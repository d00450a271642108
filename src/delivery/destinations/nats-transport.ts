import { createConnection, type Socket } from 'node:net';
import {
  type ConnectionOptions,
  DataBuffer,
  extractProtocolMessage,
  INFO,
  type NatsConnection,
  NatsConnectionImpl,
  type ServerInfo,
  setTransportFactory,
} from '@nats-io/transport-node';
import { NodeTransport, nodeResolveHost } from '@nats-io/transport-node/lib/node_transport.js';
import { withDeadline } from './kind.ts';
import type { ReadBudget } from './read-budget.ts';

/** A NATS server's first line (INFO) is a few kilobytes; one that runs past this is refused. */
const MAX_INFO_BYTES = 64 * 1024;

/** One connection attempt: the transports it made, so that its deadline ends their sockets. */
type Attempt = { transports: Set<OwnedTransport>; budget: ReadBudget; abandoned: boolean };

/** The client copies unknown options through to its transport: the attempt rides along. */
const ATTEMPT = 'waybillAttempt';

type HostPort = { hostname: string; port: number; tlsName: string };

/**
 * The client's Node transport with Waybill owning the socket (finding M1): the client's own
 * connect timeout fails the attempt but leaves its socket open, and it re-reads everything received
 * so far on every packet until the first line ends, so a server that never answers leaked a socket
 * per attempt and one that sent an endless first line held a process at full CPU. Here the socket
 * is ours from its first moment, the first line is capped and scanned once, and every byte read
 * after it counts against the link's read budget.
 */
class OwnedTransport extends NodeTransport {
  #attempt: Attempt | undefined;

  override connect(hp: HostPort, options: ConnectionOptions): Promise<void> {
    this.#attempt = (options as Record<string, unknown>)[ATTEMPT] as Attempt | undefined;
    this.#attempt?.transports.add(this);
    return super.connect(hp, options);
  }

  override dial(hp: { hostname: string; port: number }): Promise<Socket> {
    return new Promise<Socket>((resolve, reject) => {
      if (this.#attempt?.abandoned) return reject(new Error('the attempt ran out of time'));
      let failure: Error | undefined;
      const socket = createConnection(hp.port, hp.hostname);
      this.socket = socket;
      socket.setNoDelay(true);
      socket.once('connect', () => {
        socket.removeAllListeners();
        resolve(socket);
      });
      socket.on('error', (error) => {
        failure = error;
      });
      socket.once('close', () => {
        socket.removeAllListeners();
        reject(failure ?? new Error('the server closed the connection'));
      });
    });
  }

  override peekInfo(): Promise<ServerInfo> {
    return new Promise<ServerInfo>((resolve, reject) => {
      const socket = this.socket;
      let received = 0;
      let failure: Error | undefined;
      const refuse = (error: Error) => {
        socket.removeAllListeners();
        socket.destroy();
        reject(error);
      };
      socket.on('data', (frame: Uint8Array) => {
        // The frames stay in `yields`: the protocol's parser reads the INFO line from them again.
        this.yields.push(frame);
        received += frame.length;
        this.#attempt?.budget.spend(frame.length);
        const line = frame.includes(0x0a) ? extractProtocolMessage(DataBuffer.concat(...this.yields)) : '';
        if (line === '') {
          if (received > MAX_INFO_BYTES) refuse(new Error("the server's first line is too long"));
          return;
        }
        socket.removeAllListeners();
        const info = INFO.exec(line);
        if (!info) return refuse(new Error('unexpected response from server'));
        try {
          resolve(JSON.parse(info[1] as string) as ServerInfo);
        } catch {
          refuse(new Error('unexpected response from server'));
        }
      });
      socket.on('error', (error) => {
        failure = error;
      });
      socket.once('close', () => {
        socket.removeAllListeners();
        reject(failure ?? new Error('the server closed the connection'));
      });
    });
  }

  override setupHandlers(): void {
    super.setupHandlers();
    const socket = this.socket;
    const budget = this.#attempt?.budget;
    if (!budget) return;
    // A second listener only counts: the socket already flows into the client's own.
    socket.on('data', (frame: Uint8Array) => {
      if (!budget.spend(frame.length)) socket.destroy(new Error('the broker sent more than Waybill reads'));
    });
  }

  /** The attempt's deadline passed: whatever the client is waiting for, the socket ends. */
  abandon(): void {
    this.socket?.destroy();
  }
}

/**
 * Connects with the transport above, within the deadline: past it every socket the attempt opened
 * is destroyed (the client's own timeout would only reject) and the attempt fails as a timeout. The
 * transport factory is the client's process-wide setting, set again here since its own `connect`
 * sets it back to the plain transport.
 */
export function connectOwned(
  options: ConnectionOptions,
  deadlineMs: number,
  budget: ReadBudget,
): Promise<NatsConnection> {
  const attempt: Attempt = { transports: new Set(), budget, abandoned: false };
  setTransportFactory({ factory: () => new OwnedTransport(), dnsResolveFn: nodeResolveHost });
  return withDeadline(
    NatsConnectionImpl.connect({ ...options, [ATTEMPT]: attempt } as ConnectionOptions),
    deadlineMs,
    (late) => {
      attempt.abandoned = true;
      for (const transport of attempt.transports) transport.abandon();
      void late.then((connection) => connection.close()).catch(() => {});
    },
  );
}

import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import type { ReadBudget } from './read-budget.ts';

/**
 * The client sockets that `open` creates before it returns (Node publishes each one on
 * `net.client.socket`, TLS ones too, at the moment it is made). A client library that dials
 * synchronously inside its connect call (amqplib does) thus hands Waybill its socket: the attempt's
 * deadline can end it and its reads can be counted (findings M1 and M2).
 */
export function socketsOpenedBy<T>(open: () => T): { value: T; sockets: Socket[] } {
  const sockets: Socket[] = [];
  const seen = (message: unknown) => {
    sockets.push((message as { socket: Socket }).socket);
  };
  subscribe('net.client.socket', seen);
  try {
    return { value: open(), sockets };
  } finally {
    unsubscribe('net.client.socket', seen);
  }
}

/**
 * Counts what the client reads from the socket against the budget and ends the socket once it is
 * spent. The count sits on the socket's own `read`, through which every byte passes whether the
 * client pulls (amqplib reads on 'readable') or the stream flows, so the client's way of reading is
 * left as it is.
 */
export function meterReads(socket: Socket, budget: ReadBudget): void {
  const read = socket.read.bind(socket);
  socket.read = (size?: number) => {
    const chunk: unknown = read(size);
    if (chunk !== null && typeof chunk === 'object' && 'length' in chunk) {
      if (!budget.spend((chunk as Buffer).length)) {
        socket.destroy(new Error('the broker sent more than Waybill reads between two confirmations'));
        return null;
      }
    }
    return chunk;
  };
}

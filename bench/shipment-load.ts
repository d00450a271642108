/**
 * What the benchmarks that drive `waybill serve` through its API share (bench:memory,
 * bench:first-seconds): a receiver that times each shipment event's arrival, and a shipment's life
 * through the API.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receiver {
  url: string;
  server: Server;
  /** Arrival time of each event's message, by `type shipment-id status`. */
  arrivals: Map<string, number>;
  received: { count: number };
}

export async function startShipmentReceiver(): Promise<Receiver> {
  const arrivals = new Map<string, number>();
  const received = { count: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      received.count++;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          type: string;
          data: { status: string; shipment: { id: string } };
        };
        arrivals.set(`${body.type} ${body.data.shipment.id} ${body.data.status}`, at);
      } catch {
        // not a shipment event: counted, not timed
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    server,
    arrivals,
    received,
  };
}

/** A shipment's life through the API: the status it is moved to at each step, and its events. */
export const STEPS: { status: string; events: string[] }[] = [
  { status: 'confirmed', events: ['shipment.created'] },
  { status: 'picked_up', events: ['shipment.status_changed'] },
  { status: 'in_transit', events: ['shipment.status_changed'] },
  { status: 'out_for_delivery', events: ['shipment.status_changed'] },
  { status: 'delivered', events: ['shipment.status_changed', 'shipment.delivered'] },
];

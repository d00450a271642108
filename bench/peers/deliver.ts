import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { newSigningSecret } from '../../src/lib/crypto.ts';

export interface Poster {
  /** Signs and POSTs one message; throws on a non-2xx answer, as a job that failed. */
  post(id: string, body: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * What each peer's job does: sign with the `standardwebhooks` package (the reference library, the
 * same signature Waybill computes itself) and POST with undici through one keep-alive agent.
 */
export function makePoster(url: string, connections: number): Poster {
  const webhook = new Webhook(newSigningSecret());
  const agent = new Agent({ connections, keepAliveTimeout: 30_000 });
  return {
    async post(id, body) {
      const now = new Date();
      const response = await request(url, {
        method: 'POST',
        dispatcher: agent,
        body,
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': webhook.sign(id, now, body),
          'webhook-event': 'shipment.status_changed',
        },
      });
      await response.body.text();
      if (response.statusCode < 200 || response.statusCode > 299)
        throw new Error(`receiver answered ${response.statusCode}`);
    },
    close: () => agent.close(),
  };
}

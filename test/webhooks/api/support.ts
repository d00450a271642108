import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { type CompanyFixture, call, createApiToken, type Json } from '../../support/api.ts';
import type { TestWaybill } from '../../support/harness.ts';
import { checkReceived } from '../../support/message-check.ts';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP receiver on 127.0.0.1 that records what it gets and answers as the test says. */
export interface Receiver {
  url: string;
  received: Received[];
  answer: { status: number; body: string };
  close(): Promise<void>;
}

export async function startReceiver(path = '/hooks'): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    received: [],
    answer: { status: 200, body: 'ok' },
    close: async () => {},
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const message = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      checkReceived(message, receiver.url);
      receiver.received.push(message);
      response.writeHead(receiver.answer.status, { 'content-type': 'text/plain' });
      response.end(receiver.answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  receiver.url = `http://127.0.0.1:${port}${path}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/**
 * Verifies a received message with the standardwebhooks package, as a receiver would, at the
 * harness clock's time (the signatures' timestamps follow the injected clock).
 */
export function verify(secret: string, message: Received, at: Date): Json {
  const headers: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    headers[name] = String(message.headers[name] ?? '');
  }
  const wh = new Webhook(secret);
  // standardwebhooks checks the timestamp against the real clock; our clock is a manual one.
  const realNow = Date.now;
  Date.now = () => at.getTime();
  try {
    return wh.verify(message.body, headers);
  } finally {
    Date.now = realNow;
  }
}

export async function createEndpoint(
  w: TestWaybill,
  token: string,
  body: Record<string, unknown>,
): Promise<Json> {
  const response = await call(w, 'POST', '/v1/webhook-endpoints', {
    token,
    body: { event_types: ['shipment.created'], ...body },
  });
  if (response.status !== 201) throw new Error(`endpoint failed: ${response.status} ${response.text}`);
  return response.body;
}

/** A merchant account of the company with a live token bound to it. */
export async function createMerchant(
  w: TestWaybill,
  company: CompanyFixture,
  mode: 'live' | 'test' = 'live',
): Promise<{ accountId: string; token: string }> {
  const account = await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
    token: company.owner.token,
    body: { name: 'Merchant' },
  });
  if (account.status !== 201) throw new Error(`account failed: ${account.text}`);
  const token = await createApiToken(w, company.owner, company.tenantId, {
    mode,
    customer_account_id: account.body.id,
  });
  return { accountId: account.body.id, token };
}

#!/usr/bin/env node
// A webhook receiver for local development: prints every message and checks its signature
// with the `standardwebhooks` package when WEBHOOK_SECRET (the endpoint's whsec_ secret) is set.
// Usage: WEBHOOK_SECRET=whsec_... npm run receiver   (listens on http://127.0.0.1:4000/webhooks)
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const port = Number(process.env.RECEIVER_PORT ?? 4000);
const secret = process.env.WEBHOOK_SECRET;
const verifier = secret ? new Webhook(secret.replace(/^whsec_/, '')) : null;

createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(
      ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [
        name,
        String(request.headers[name] ?? ''),
      ]),
    );
    let verdict = 'signature not checked (set WEBHOOK_SECRET)';
    if (verifier) {
      try {
        verifier.verify(body, headers);
        verdict = 'signature valid';
      } catch (error) {
        verdict = `signature INVALID: ${(error as Error).message}`;
      }
    }
    const event = JSON.parse(body || '{}') as {
      type?: string;
      data?: { status?: string; previous_status?: string };
    };
    console.log(
      `${new Date().toISOString()} ${request.headers['webhook-event']} ${headers['webhook-id']} ` +
        `${event.data?.previous_status ?? '-'} -> ${event.data?.status ?? '-'} (${verdict})`,
    );
    response.writeHead(verifier && verdict !== 'signature valid' ? 400 : 204).end();
  });
}).listen(port, '127.0.0.1', () => console.log(`Receiver listening on http://127.0.0.1:${port}/webhooks`));

import { Webhook } from 'standardwebhooks';

let sent = 0;

/** The headers a carrier's Standard Webhooks library puts on a message, signed at `at`. */
export function signedHeaders(
  secret: string,
  body: string,
  options: { id?: string; at: Date },
): Record<string, string> {
  sent += 1;
  const id = options.id ?? `msg_carrier_${sent}`;
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(options.at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, options.at, body),
  };
}

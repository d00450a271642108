import type { SendError } from '../../delivery/tables.ts';

/**
 * Why an attempt failed, in words a person reads beside the code (issue 53 item 6). The codes are
 * the API's (CONTRACT.md); the words never carry a socket's message, which could name an address
 * the guard refused.
 */
const ERROR_WORDS: Record<SendError, string> = {
  timeout: 'no answer within the 10-second deadline',
  connection_failed: 'the connection was refused or dropped: nothing accepted it at that address and port',
  dns_failed: 'the host name did not resolve (DNS)',
  address_not_allowed: 'the host resolves to a private or reserved address, where Waybill does not send',
  tls_failed: 'the TLS handshake failed: the certificate is not trusted, has expired or names another host',
  broker_refused: 'the broker refused the message (its reason is in the answer)',
  broker_unroutable: 'the broker had no queue or stream for the message',
  auth_failed: 'the broker refused the credentials',
};

/** What an HTTP status says, by its class. */
function statusWords(status: number): string {
  if (status >= 200 && status < 300) return 'accepted';
  if (status === 410) return 'gone: the receiver asked for no more messages';
  if (status === 429) return 'too many requests: the receiver asked to slow down';
  if (status >= 300 && status < 400) return 'a redirect, which Waybill does not follow';
  if (status >= 500) return "the receiver's server failed";
  return 'the receiver refused the message';
}

/** What an attempt got, code first, then why in words: "HTTP 503 (the receiver's server failed)". */
export function attemptAnswer(attempt: { status_code: number | null; error: string | null }): string {
  if (attempt.status_code !== null)
    return `HTTP ${attempt.status_code} (${statusWords(attempt.status_code)})`;
  if (attempt.error === null) return 'confirmed by the broker';
  const words = ERROR_WORDS[attempt.error as SendError];
  return words ? `${attempt.error} (${words})` : attempt.error;
}

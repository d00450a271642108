import type { Agent } from 'undici';
import { type OutgoingMessage, type SendResult, sendMessage } from '../sender.ts';

/** The first kind: an HTTPS POST through the guarded agent (sender.ts), as before destinations. */
export function sendHttps(agent: Agent, message: OutgoingMessage, deadlineMs: number): Promise<SendResult> {
  return sendMessage(agent, message, { deadlineMs });
}

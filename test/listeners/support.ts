import { WebSocket } from 'undici';
import type { MessageFrame, ReadyFrame, ResultFrame } from '../../src/modules/listeners/protocol.ts';
import type { TestWaybill } from '../support/harness.ts';
import { checkReceived } from '../support/message-check.ts';

/** A listener's connection driven by the test: the frames it got, and a way to answer them. */
export interface TestConnection {
  ready: Promise<ReadyFrame>;
  messages: MessageFrame[];
  /** Resolves with the next message not yet taken. */
  nextMessage(): Promise<MessageFrame>;
  answer(frame: MessageFrame, result: Partial<ResultFrame>): void;
  /** Resolves with the close code once closed. */
  closed: Promise<number>;
  close(): void;
}

export function connectListener(w: TestWaybill, listenerId: string, token: string): TestConnection {
  const url = `${w.url.replace(/^http/, 'ws')}/v1/webhook-listeners/${listenerId}/connect`;
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  const messages: MessageFrame[] = [];
  let taken = 0;
  const waiters: Array<() => void> = [];
  let onReady: (frame: ReadyFrame) => void = () => {};
  const ready = new Promise<ReadyFrame>((resolve) => {
    onReady = resolve;
  });
  socket.addEventListener('message', (event) => {
    const frame = JSON.parse(String(event.data));
    if (frame.type === 'ready') onReady(frame);
    if (frame.type === 'message') {
      checkReceived(frame, `listener ${listenerId}`);
      messages.push(frame);
      for (const wake of waiters.splice(0)) wake();
    }
  });
  const closed = new Promise<number>((resolve) => socket.addEventListener('close', (e) => resolve(e.code)));
  return {
    ready,
    messages,
    async nextMessage() {
      while (messages.length <= taken) await new Promise<void>((resolve) => waiters.push(resolve));
      taken += 1;
      return messages[taken - 1] as MessageFrame;
    },
    answer(frame, result) {
      const full: ResultFrame = {
        type: 'result',
        id: frame.id,
        status_code: 200,
        error: null,
        duration_ms: 3,
        body: Buffer.from('ok').toString('base64'),
        ...result,
      };
      socket.send(JSON.stringify(full));
    },
    closed,
    close: () => socket.close(),
  };
}

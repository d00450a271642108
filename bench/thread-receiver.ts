import { Worker } from 'node:worker_threads';

/**
 * A receiver in a thread of its own that notes when each request arrived (epoch milliseconds):
 * a promise about sliding seconds (a rate limit) is measured at arrival, and the arrival time must
 * not wait for the event loop of a process that also sends, claims or receives thousands a second.
 * Used by the rate-limit benchmark (bench/controls.ts) and its test (test/delivery/controls.test.ts).
 */
export async function startThreadReceiver(): Promise<{
  url: string;
  times: number[];
  close(): Promise<number>;
}> {
  const thread = new Worker(
    `const { createServer } = require('node:http');
     const { parentPort } = require('node:worker_threads');
     const server = createServer((req, res) => {
       const at = performance.timeOrigin + performance.now();
       req.resume();
       req.on('end', () => { parentPort.postMessage(at); res.end('ok'); });
     });
     server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));`,
    { eval: true },
  );
  const times: number[] = [];
  const port = await new Promise<number>((resolve) => {
    thread.on('message', (message: number | { port: number }) => {
      if (typeof message === 'number') times.push(message);
      else resolve(message.port);
    });
  });
  return { url: `http://127.0.0.1:${port}/hook`, times, close: () => thread.terminate() };
}

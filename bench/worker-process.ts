#!/usr/bin/env node
// One Waybill delivery worker in a process of its own (`waybill worker` as a deployment runs it),
// for the scale-out part of bench/webhooks.ts: it opens the benchmark's schema, says it is ready,
// starts claiming on "go", stops claiming on "pause" (and says so, with what it did: its worker's
// counts) and exits on "stop" (the same).
import pino from 'pino';
import { buildContext } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../src/delivery/worker.ts';
import { systemClock } from '../src/lib/clock.ts';

const [url, schema] = process.argv.slice(2);
const config = loadConfig({
  WAYBILL_DATABASE_URL: url as string,
  WAYBILL_SECRET_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  WAYBILL_DEMO: '0',
  WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
});
const database = await openDatabase(config, { schema: schema as string, poolSize: 10 });
const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
let worker: DeliveryWorker | null = null;
/** The process's context switches (the kernel's), to tell a busy machine's cost from the worker's own. */
const contextSwitches = () => {
  const usage = process.resourceUsage();
  return { voluntary: usage.voluntaryContextSwitches, involuntary: usage.involuntaryContextSwitches };
};
let switchesAtGo = contextSwitches();
const countsSinceGo = () => {
  if (!worker) return null;
  const now = contextSwitches();
  return {
    ...worker.counts(),
    voluntarySwitches: now.voluntary - switchesAtGo.voluntary,
    involuntarySwitches: now.involuntary - switchesAtGo.involuntary,
  };
};
process.on('disconnect', () => process.exit(0));
process.on('message', async (command: 'go' | 'pause' | 'stop') => {
  if (command === 'go') {
    worker = startDeliveryWorker(ctx, { pollMs: 200 });
    switchesAtGo = contextSwitches();
  } else if (command === 'pause') {
    await worker?.stop();
    process.send?.({ paused: true, counts: countsSinceGo() });
    worker = null;
  } else {
    await worker?.stop();
    const counts = countsSinceGo();
    await database.close();
    // Exit once the answer is out: an exit right after send() can drop it.
    process.send?.({ stopped: true, counts }, () => process.exit(0));
  }
});
process.send?.('ready');

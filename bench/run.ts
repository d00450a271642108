#!/usr/bin/env node
// Runs every benchmark in turn; each prints its own comparison lines against a baseline
// measured in the same run.
import { spawnSync } from 'node:child_process';

for (const bench of ['bench/webhooks.ts', 'bench/oauth.ts', 'bench/memory.ts']) {
  console.log(`\n== ${bench}`);
  const result = spawnSync(process.execPath, [bench], { stdio: 'inherit', env: process.env });
  if (result.status !== 0) process.exitCode = result.status ?? 1;
}

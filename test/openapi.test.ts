import { readFileSync } from 'node:fs';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { engine } from './support/harness.ts';
import { generateOpenApi } from './support/openapi.ts';

// The committed reference must match the routes: run `npm run openapi` after changing a schema.
describe.skipIf(engine !== 'pglite')('docs/openapi.json', () => {
  it('matches the document the routes generate', { timeout: 120_000 }, async () => {
    const committed = JSON.parse(readFileSync('docs/openapi.json', 'utf8'));
    expect(await generateOpenApi()).toEqual(committed);
  });
});

// Redocly's recommended rules, as `redocly lint` runs them, on the committed document. One rule is
// off: the committed copy comes from the development configuration, whose server is
// http://localhost:3000; a deployment serves its own at /openapi.json with WAYBILL_BASE_URL.
describe.skipIf(engine !== 'pglite')('docs/openapi.json under redocly lint', () => {
  it('has no problem, error or warning, under the recommended rules', async () => {
    const config = await createConfig({
      extends: ['recommended'],
      rules: { 'no-server-example.com': 'off' },
    });
    const problems = await lintFromString({
      source: readFileSync('docs/openapi.json', 'utf8'),
      absoluteRef: 'docs/openapi.json',
      config,
    });
    const found = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    // The one exception: a WebSocket's success is 101 Switching Protocols, which the rule does not
    // count as a success (`waybill listen`'s connection).
    const webSocketOnly = (problem: string) =>
      problem.startsWith('warn operation-2xx-response:') && problem.includes('~1connect/get/responses');
    expect(found.filter((problem) => !webSocketOnly(problem))).toEqual([]);
  });
});

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { lintFromString, loadConfig } from '@redocly/openapi-core';
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

// `redocly lint` as the command line runs it here: the recommended rules (redocly.yaml) and the
// one problem .redocly.lint-ignore.yaml ignores, with its reason.
describe.skipIf(engine !== 'pglite')('docs/openapi.json under redocly lint', () => {
  it('has no problem, error or warning, under the recommended rules', async () => {
    const config = await loadConfig({ configPath: 'redocly.yaml' });
    const problems = await lintFromString({
      source: readFileSync('docs/openapi.json', 'utf8'),
      absoluteRef: resolve('docs/openapi.json'),
      config,
    });
    const found = (ignored: boolean) =>
      problems
        .filter((p) => (p.ignored ?? false) === ignored)
        .map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(found(false)).toEqual([]);
    // A WebSocket's success is 101 Switching Protocols, which the rule does not count as a success.
    expect(found(true)).toEqual([
      'warn operation-2xx-response: Operation must have at least one `2XX` response. at #/paths/~1v1~1webhook-listeners~1{id}~1connect/get/responses',
    ]);
  });
});

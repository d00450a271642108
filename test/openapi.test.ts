import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { engine } from './support/harness.ts';
import { generateOpenApi } from './support/openapi.ts';

// The committed reference must match the routes: run `npm run openapi` after changing a schema.
describe.skipIf(engine !== 'pglite')('docs/openapi.json', () => {
  it('matches the document the routes generate', async () => {
    const committed = JSON.parse(readFileSync('docs/openapi.json', 'utf8'));
    expect(await generateOpenApi()).toEqual(committed);
  });
});

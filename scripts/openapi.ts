#!/usr/bin/env node
// Writes docs/openapi.json from the route schemas; `npm test` fails when the committed copy drifts.
import { writeFileSync } from 'node:fs';
import { generateOpenApi } from '../test/support/openapi.ts';

writeFileSync('docs/openapi.json', `${JSON.stringify(await generateOpenApi(), null, 2)}\n`);
console.log('docs/openapi.json written');

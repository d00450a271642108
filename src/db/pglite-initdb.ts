/**
 * Run by `initializeInChild` (./pglite.ts) as `node --liftoff-only pglite-initdb.ts <folder>`:
 * creates a PGlite cluster in the folder and exits.
 */
import { PGlite } from '@electric-sql/pglite';
import { PGLITE_OPTIONS } from './pglite.ts';

const folder = process.argv[2];
if (!folder) throw new Error('usage: pglite-initdb.ts <folder>');
const pglite = await PGlite.create(folder, PGLITE_OPTIONS);
await pglite.close();

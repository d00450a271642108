import { mkdirSync, writeFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { SerializedPGliteDialect } from '../../src/db/drivers.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/schema.ts';

export const TEMPLATE_PATH = '.test-cache/pglite-template.tar.gz';

/**
 * A fresh PGlite takes seconds to initialise; loading a dump takes a fraction of that. So the
 * suite migrates one database once and every test file starts from a copy of it.
 */
export async function setup(): Promise<void> {
  const pglite = await PGlite.create();
  const db = new Kysely<Database>({ dialect: new SerializedPGliteDialect({ pglite }) });
  await migrateToLatest(db);
  const dump = await pglite.dumpDataDir('gzip');
  mkdirSync('.test-cache', { recursive: true });
  writeFileSync(TEMPLATE_PATH, Buffer.from(await dump.arrayBuffer()));
  await db.destroy();
}

import pino from 'pino';
import { buildApp, buildContext } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { TEST_SECRET_KEY } from './harness.ts';

/** The OpenAPI document as a fixed configuration produces it (its server's default: http://localhost:3000). */
export async function generateOpenApi(): Promise<unknown> {
  const config = loadConfig({
    WAYBILL_DATABASE_URL: 'memory:',
    WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
    WAYBILL_DEMO: '0',
  });
  const database = await openDatabase(config);
  const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'silent' }) });
  const app = await buildApp(ctx);
  await app.ready();
  const document = app.swagger();
  await app.close();
  await database.close();
  return JSON.parse(JSON.stringify(document));
}

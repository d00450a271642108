import pg from 'pg';

/**
 * Creates the peers' database when the server does not have it yet (a fresh machine has only
 * `test`): connects to the server's `postgres` database to do so. Anything else is left to the
 * caller's own connection error.
 */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  try {
    await client.connect();
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
  } catch {
    // No such server or no right to create: the peer's own connection says why.
  } finally {
    await client.end().catch(() => {});
  }
}

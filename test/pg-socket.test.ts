// The README's advice for a PostgreSQL on the same machine: connect through its Unix socket, the URL's `host`
// parameter naming the socket's directory. The configuration accepts that URL as given, and a store opened with it
// (migrations, the pool, the notification listener) talks to the server over the socket, not TCP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/database.js';
import { dropSchema, requirePostgres, uniqueSchema } from './helpers/harness.js';

const SOCKET_DIR = '/var/run/postgresql';

test('a URL naming the Unix socket is accepted as given, with or without a host before the path', () => {
  for (const url of [`postgres://gpuplane@localhost/gpuplane?host=${SOCKET_DIR}`, `postgres://gpuplane@/gpuplane?host=${SOCKET_DIR}`, `postgresql:///gpuplane?host=${SOCKET_DIR}`]) {
    assert.equal(loadConfig({ GPUPLANE_DATABASE_URL: url }).databaseUrl, url);
  }
  // Still refused: what no reading of a URL accepts.
  assert.throws(() => loadConfig({ GPUPLANE_DATABASE_URL: 'postgres://gpuplane@:x/gpuplane' }), /GPUPLANE_DATABASE_URL/);
});

test('a store opened through the Unix socket connects over it (PostgreSQL)', async () => {
  // libpq's form: no host before the path, the socket's directory in `host`.
  const u = new URL(requirePostgres());
  u.searchParams.set('host', SOCKET_DIR);
  const url = loadConfig({ GPUPLANE_DATABASE_URL: `postgres://${u.username}@${u.pathname}${u.search}` }).databaseUrl;
  const schema = uniqueSchema();
  const store = await openDatabase(url, { pgSchema: schema, pgPoolSize: 2 });
  try {
    // inet_server_addr() is the server's address for a TCP connection, and null over a Unix socket.
    const { rows } = await sql<{ addr: string | null; n: number }>`SELECT inet_server_addr() AS addr, (SELECT count(*)::int FROM users) AS n`.execute(store.db);
    assert.deepEqual(rows, [{ addr: null, n: 0 }]);
  } finally {
    await store.close();
    await dropSchema(schema);
  }
});

// Logs for people (issue 11, item 20): readable lines on a terminal, JSON lines otherwise, GPUPLANE_LOG_FORMAT to
// force either, and a readable start-up line in both. Secrets in both formats: logging.security.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { chooseLogFormat, createLogger, logListening, type LogFormat } from '../src/platform/logging.js';
import { createTestApp } from './helpers/harness.js';

const BIN = join(import.meta.dirname, '..', 'bin', 'gpuplane.mjs');
/** How long a process may take to start before the test gives up (a loaded CI machine is slow). */
const START_TIMEOUT_MS = 60_000;
const TIME = String.raw`\[\d\d:\d\d:\d\d\.\d{3}\]`;
const LISTENING = /gpuplane listening on http:\/\/127\.0\.0\.1:(\d+) \(emulator mode, virtual clock, sqlite\)/;

async function captured(format: LogFormat) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, log: await createLogger({ level: 'info', format, destination }) };
}

test('auto is pretty on a terminal and JSON anywhere else; json and pretty force either', () => {
  assert.equal(chooseLogFormat('auto', true), 'pretty');
  assert.equal(chooseLogFormat('auto', false), 'json');
  assert.equal(chooseLogFormat('auto', undefined), 'json');
  assert.equal(chooseLogFormat('json', true), 'json');
  assert.equal(chooseLogFormat('pretty', false), 'pretty');
});

test('pretty: one readable line per request and a readable start-up line, no JSON', async () => {
  const out = await captured('pretty');
  const t = await createTestApp('sqlite', { log: out.log });
  try {
    logListening(out.log, { url: 'http://127.0.0.1:8080', port: 8080, mode: 'emulator', clock: 'virtual', db: 'sqlite' });
    assert.equal((await t.request('GET', '/api/v0/users/current')).status, 200);
    assert.equal((await t.request('GET', '/nowhere?api_key=gpk_x&b=2', { key: null })).status, 404);
    assert.match(out.lines[0], new RegExp(`^${TIME} INFO: gpuplane listening on http://127\\.0\\.0\\.1:8080 \\(emulator mode, virtual clock, sqlite\\)$`));
    assert.match(out.lines[1], new RegExp(`^${TIME} INFO: GET /api/v0/users/current 200 \\d+(\\.\\d)? ms user 1$`));
    assert.match(out.lines[2], new RegExp(`^${TIME} INFO: GET /nowhere\\?api_key=\\[REDACTED\\]&b=2 404 \\d+(\\.\\d)? ms$`));
    assert.equal(out.lines.length, 3);
  } finally {
    await t.close();
  }
});

test('json: every line is JSON; the start-up line is a sentence with its parts as fields', async () => {
  const out = await captured('json');
  const t = await createTestApp('sqlite', { log: out.log });
  try {
    logListening(out.log, { url: 'http://127.0.0.1:8080', port: 8080, mode: 'emulator', clock: 'virtual', db: 'sqlite' });
    assert.equal((await t.request('GET', '/api/v0/users/current')).status, 200);
    const records = out.lines.map((l) => JSON.parse(l));
    assert.equal(records.length, 2);
    assert.equal(records[0].msg, 'gpuplane listening on http://127.0.0.1:8080 (emulator mode, virtual clock, sqlite)');
    assert.deepEqual([records[0].url, records[0].port, records[0].mode, records[0].clock, records[0].db], ['http://127.0.0.1:8080', 8080, 'emulator', 'virtual', 'sqlite']);
    assert.deepEqual([records[1].msg, records[1].method, records[1].url, records[1].status], ['request', 'GET', '/api/v0/users/current', 200]);
  } finally {
    await t.close();
  }
});

/** The environment of a served process: SQLite in memory, a virtual clock, info logs. */
const SERVE_ENV = {
  ...process.env,
  GPUPLANE_DATABASE_URL: 'sqlite::memory:',
  GPUPLANE_CLOCK: 'virtual',
  GPUPLANE_LOG_LEVEL: 'info',
  GPUPLANE_BOOTSTRAP_API_KEY: 'gpk_logging_test_owner_0123456789',
  GPUPLANE_SECRET_KEY: 'logging-test-secret-0123456789',
  GPUPLANE_SIM_MACHINES: '5',
  NO_COLOR: '1',
};

/**
 * Runs `gpuplane serve --port 0` with standard output on a pseudo-terminal (util-linux `script`), requests /healthz
 * once it listens, and returns everything it printed once that request's line is out.
 */
async function serveOnTerminal(env: Record<string, string>, requestLine: RegExp): Promise<string> {
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} serve --port 0`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { ...SERVE_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no request line within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
      let requested = false;
      const onData = (chunk: Buffer) => {
        out += chunk.toString().replace(/\r/g, '');
        const port = LISTENING.exec(out)?.[1];
        if (port && !requested) {
          requested = true;
          fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.arrayBuffer()).catch(reject);
        }
        if (requestLine.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`exited (${code}):\n${out}`)));
    });
    return out;
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

test('a real process on a terminal writes readable lines: the start-up line and one line per request', async () => {
  assert.equal(spawnSync('script', ['--version']).status, 0, 'util-linux script runs');
  const out = await serveOnTerminal({ GPUPLANE_LOG_FORMAT: 'auto' }, new RegExp(`${TIME} INFO: GET /healthz 200 `));
  assert.match(out, new RegExp(`^${TIME} INFO: ${LISTENING.source}$`, 'm'));
  assert.match(out, new RegExp(`^${TIME} INFO: GET /healthz 200 \\d+(\\.\\d)? ms$`, 'm'));
  assert.doesNotMatch(out, /^\{/m, 'no JSON line');
});

test('GPUPLANE_LOG_FORMAT=json keeps JSON lines on a terminal', async () => {
  const out = await serveOnTerminal({ GPUPLANE_LOG_FORMAT: 'json' }, /"url":"\/healthz","status":200/);
  const logLines = out.split('\n').filter((l) => l.startsWith('{'));
  const records = logLines.map((l) => JSON.parse(l));
  assert.ok(records.some((r) => LISTENING.test(r.msg)), 'the start-up sentence is the message');
  assert.ok(records.some((r) => r.msg === 'request' && r.url === '/healthz' && r.status === 200));
  assert.doesNotMatch(out, new RegExp(`^${TIME} `, 'm'), 'no readable line');
});

test('a real process writing to a pipe logs JSON lines', async () => {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { env: SERVE_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start-up line within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (/gpuplane listening on [^\n]*\n/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.once('exit', (code) => reject(new Error(`exited (${code}):\n${out}`)));
    });
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  const records = out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const record = records.find((r) => String(r.msg).startsWith('gpuplane listening on'));
  assert.match(record.msg, LISTENING);
  assert.equal(record.port, Number(LISTENING.exec(record.msg)![1]));
});

// Threats: reading someone else's `execute` output (result_url is the only credential: unguessable, one-time, never
// stored or logged in clear), running more than the allowed command (shell injection), and leaking a renter's registry
// password given to `take snapshot` (at rest, in logs, in replies, to another machine's agent, after it is used).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../src/platform/logging.js';
import { createTestApp, DIALECTS, type TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { rentOk } from './instances-fixtures.js';

const PASSWORD = 'registry-password-7f3a9c';

for (const dialect of DIALECTS) {
  describe(`instance extras security [${dialect}]`, () => {
    const lines: string[] = [];
    let t: TestApp;
    before(async () => {
      const destination = new Writable({
        write(chunk, _enc, done) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      });
      t = await createTestApp(dialect, { log: await createLogger({ level: 'trace', format: 'json', destination }) });
    });
    after(async () => {
      await t.close();
    });

    async function onHost() {
      const host = await hostWithMachine(t);
      const renter = await t.createUser({ credit: 100 });
      const { id } = await rentOk(t, host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
      const d = await desired(t, host);
      await report(t, host, [observed(id, d.instances[0].boot)], d.version);
      return { host, key: renter.api_key, id };
    }

    test('an execute output is served once, only to its URL; its token is stored hashed and never logged', async () => {
      const { host, key, id } = await onHost();
      const ex = await t.request('PUT', `/api/v0/instances/command/${id}/`, { key, body: { command: 'ls /root' } });
      assert.equal(ex.status, 200, ex.raw);
      const url = new URL(ex.body.result_url);
      const token = url.searchParams.get('token')!;
      const req = (await desired(t, host)).commands[0];
      await t.request('PUT', `/api/v0/agent/commands/${req.request_id}/`, { key: host.machineKey, body: { output: 'secret-file.txt\n', exit_code: 0 } });
      // Another token of the same length, and the request id the agent knows, open nothing.
      assert.equal((await t.request('GET', `/api/v0/instances/command_output/?token=${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`, { key: null })).status, 404);
      assert.equal((await t.request('GET', `/api/v0/instances/command_output/?token=${req.request_id}`, { key: null })).status, 404);
      const got = await t.request('GET', `${url.pathname}${url.search}`, { key: null });
      assert.equal(got.raw, 'secret-file.txt\n');
      assert.equal((await t.request('GET', `${url.pathname}${url.search}`, { key: null })).status, 404);
      const row = await t.store.db.selectFrom('instance_commands').selectAll().where('request_id', '=', req.request_id).executeTakeFirstOrThrow();
      assert.ok(!JSON.stringify(row).includes(token));
      assert.equal(row.output, null, 'not kept once served');
      assert.ok(lines.some((l) => l.includes('/api/v0/instances/command_output/')), 'the fetch was logged');
      assert.ok(!lines.some((l) => l.includes(token)), 'but not its token');
    });

    test('shell syntax never reaches a host: refused, and what is allowed arrives as argv', async () => {
      const { host, key, id } = await onHost();
      for (const command of ['ls && id', 'ls `id`', 'du $(id)', 'rm -r / ; reboot', 'ls > /etc/passwd', "ls '/x' | sh"]) {
        const r = await t.request('PUT', `/api/v0/instances/command/${id}/`, { key, body: { command } });
        assert.equal(r.status, 400, command);
      }
      assert.deepEqual((await desired(t, host)).commands, []);
      await t.request('PUT', `/api/v0/instances/command/${id}/`, { key, body: { command: "ls '/a; rm -rf /'" } });
      assert.deepEqual((await desired(t, host)).commands[0].argv, ['ls', '/a; rm -rf /'], 'a quoted path is one word, never run by a shell');
    });

    test('the registry password: sealed at rest, only in its machine\'s desired state while open, never in replies or logs', async () => {
      const { host, key, id } = await onHost();
      const other = await hostWithMachine(t);
      const res = await t.request('POST', `/api/v0/instances/take_snapshot/${id}/`, {
        key, body: { id: String(id), personal_repo: 'me/snap', docker_login_user: 'me', docker_login_pass: PASSWORD, pause: 'true' },
      });
      assert.equal(res.status, 200, res.raw);
      assert.ok(!res.raw.includes(PASSWORD));
      const row = await t.store.db.selectFrom('instance_snapshots').selectAll().where('instance_id', '=', id).executeTakeFirstOrThrow();
      assert.ok(!JSON.stringify(row).includes(PASSWORD), 'sealed');
      assert.ok(!JSON.stringify(await desired(t, other)).includes(PASSWORD), 'not sent to another machine');
      const mine = await desired(t, host);
      assert.equal(mine.snapshots[0].docker_login.password, PASSWORD);
      const stolen = await t.request('PUT', `/api/v0/agent/snapshots/${mine.snapshots[0].request_id}/`, { key: other.machineKey, body: {} });
      assert.equal(stolen.status, 404, 'another machine cannot answer it');
      const list = await t.request('GET', `/api/v0/instances/snapshots/${id}/`, { key });
      assert.ok(!list.raw.includes(PASSWORD));
      await t.request('PUT', `/api/v0/agent/snapshots/${mine.snapshots[0].request_id}/`, { key: host.machineKey, body: {} });
      const after = await t.store.db.selectFrom('instance_snapshots').selectAll().where('instance_id', '=', id).executeTakeFirstOrThrow();
      assert.equal(after.login_sealed, null, 'forgotten once used');
      assert.ok(!JSON.stringify(await desired(t, host)).includes(PASSWORD));
      assert.ok(!lines.some((l) => l.includes(PASSWORD)), 'never logged');
    });
  });
}

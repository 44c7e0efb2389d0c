// Issue 34 item 5: the recorder (GPUPLANE_EMU_RECORD) writes every API call with its secrets replaced, and
// `gpuplane emu replay` replays a recording against a fresh emulator and reports the answers that differ.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { createTestApp, DIALECTS, OWNER_KEY, type TestApp } from './helpers/harness.js';
import { runCli } from './cli-helpers.js';
import { Redactor, SECRET_CONTAINERS, SECRET_FIELDS } from '../src/emulator/emu-recorder/recorder-redact.js';
import { parseRecording, replay, reportText } from '../src/emulator/emu-recorder/recorder-replay.js';
import type { RecordedCall, RecordingHeader } from '../src/emulator/emu-recorder/recorder-format.js';

/**
 * Field names of the API (its OpenAPI document) that look like secrets but are not, each with why. A field that looks
 * like one and is in neither list fails the test below: whoever adds it decides.
 */
const NOT_SECRETS: Record<string, string> = {
  key_id: 'an id', api_key_id: 'an id', exit_code: 'a process exit status', next_token: 'a pagination cursor',
  after_token: 'a pagination cursor', backup_codes_remaining: 'a count', key_params: 'a permission list',
  ssh_key: 'a public key (a pasted private key is caught by its BEGIN line)', ssh_keys: 'public keys',
  apikeys: 'the key list (ids, names, permissions: never the secret)', s3_key: 'a storage object name',
  signature: 'a signature over a URL, checked with the public key', auth_signature: 'a signature, as above',
  public_key: 'a public key', docker_login_user: 'a user name', docker_login_repo: 'a registry name',
  tfa_method: 'a method name', tfa_method_id: 'an id', tfa_status: 'a state', tfa_enabled: 'a flag', tfa_required: 'a flag',
  legacy_tfa: 'a flag', legacy_tfa_user: 'a flag', new_method_authorized: 'a flag', totpSetup: 'a flag',
  personal_repo: 'a repository name', sessions: 'the session list (ids, clients, times: never the session key)',
  private: 'a template\'s visibility flag', ssh_keys_added: 'a count', api_keys_added: 'a count', secrets: 'a container: every value under it is redacted (SECRET_CONTAINERS)',
};
const LOOKS_SECRET = /key|secret|pass(word)?|token|code|otp|tfa|private|credential|cookie|login|signature|session/i;

describe('redaction: the list is explicit', () => {
  test('every field of the API that looks like a secret is listed as one or as not one', async () => {
    const t = await createTestApp('sqlite');
    try {
      const doc = (await t.request('GET', '/api/v0/openapi.json')).body;
      const names = new Set<string>();
      const walk = (v: unknown): void => {
        if (!v || typeof v !== 'object') return;
        const props = (v as { properties?: Record<string, unknown> }).properties;
        if (props && typeof props === 'object') for (const k of Object.keys(props)) names.add(k);
        for (const x of Object.values(v)) walk(x);
      };
      walk(doc);
      const unlisted = [...names].filter((n) => LOOKS_SECRET.test(n) && !SECRET_FIELDS.has(n) && !SECRET_CONTAINERS.has(n) && !(n in NOT_SECRETS));
      assert.deepEqual(unlisted, [], 'add each to SECRET_FIELDS (recorder-redact.ts) or to NOT_SECRETS here, with why');
      for (const name of ['api_key', 'key', 'password', 'new_password', 'current_password', 'secret', 'tfa_secret', 'code', 'backup_code', 'backup_codes', 'token', 'session_key', 'jupyter_token', 'machine_key', 'mtoken', 'docker_login_pass', 'new_api_key', 'instance_api_key']) {
        assert.ok(SECRET_FIELDS.has(name), `${name} is a secret field`);
        assert.ok(names.has(name) || ['totp_secret'].includes(name), `${name} is a field of the API (the list names real fields)`);
      }
    } finally {
      await t.close();
    }
  });

  test('values, headers, URLs and texts', () => {
    const r = new Redactor();
    const headers = r.headers({ authorization: 'Bearer gpk_abcdefghijklmnop', 'content-type': 'application/json', cookie: 'gpuplane_session=s3ss10nvalue; other=x', 'x-forwarded-for': '1.2.3.4' });
    assert.deepEqual(headers, { authorization: 'Bearer <secret:1>', 'content-type': 'application/json', cookie: 'gpuplane_session=<secret:2>; other=<secret:3>' });
    const body = r.json({
      email: 'a@example.com', password: 'hunter2hunter2', code: '123456', backup_codes: ['aaaa-bbbb', 'cccc-dddd'],
      nested: { api_key: 'gpk_abcdefghijklmnop', key: { id: 3, ssh_key: 'ssh-ed25519 AAAAC3Nza me@host', name: 'laptop' } },
      env: { '-e HF_TOKEN': 'hf_0123456789', '-e MODEL': 'llama', '-p 8080:8080': '1' },
      onstart: 'export OPENAI_API_KEY=sk-live-abcdef; MODEL=llama python x.py; echo -e HF_TOKEN=hf_0123456789',
      pasted: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----',
      text: 'Your code is 123456. Reset: http://127.0.0.1:8080/reset?token=t0k3nt0k3n&x=1',
      count: 5, empty: '',
    }, '/api/v0/users/');
    assert.deepEqual(body, {
      email: 'a@example.com', password: '<secret:4>', code: '<secret:5>', backup_codes: ['<secret:6>', '<secret:7>'],
      // The same key as the Authorization header: the same placeholder. An SSH key's reply is an object: kept.
      nested: { api_key: '<secret:1>', key: { id: 3, ssh_key: 'ssh-ed25519 AAAAC3Nza me@host', name: 'laptop' } },
      env: { '-e HF_TOKEN': '<secret:8>', '-e MODEL': 'llama', '-p 8080:8080': '1' },
      // A known secret is found inside any string (the env value above), and `NAME=…` with a secret's name.
      onstart: 'export OPENAI_API_KEY=<secret:9>; MODEL=llama python x.py; echo -e HF_TOKEN=<secret:8>',
      pasted: '<secret:10>',
      text: 'Your code is <secret:5>. Reset: http://127.0.0.1:8080/reset?token=<secret:11>&x=1',
      count: 5, empty: '',
    });
    assert.equal(r.url('/api/v0/instances/?api_key=gpk_abcdefghijklmnop&owner=me'), '/api/v0/instances/?api_key=<secret:1>&owner=me');
    assert.equal(r.url('/api/v0/instances/logs/l0gt0ken/'), '/api/v0/instances/logs/<secret:12>/');
    // Env vars: `value` is the secret, `key` its name; the list reply's values are all secrets.
    assert.deepEqual(r.json({ key: 'HF_TOKEN', value: 'hf_0123456789' }, '/api/v0/secrets/'), { key: 'HF_TOKEN', value: '<secret:8>' });
    assert.deepEqual(r.json({ success: true, secrets: { HF_TOKEN: 'hf_0123456789', OTHER: 'zz' } }, '/api/v0/secrets/'), { success: true, secrets: { HF_TOKEN: '<secret:8>', OTHER: '<secret:13>' } });
    // Elsewhere `key` is a secret (a created API key) and `value` is not.
    assert.deepEqual(r.json({ key: 'gpk_new_key_0123456789', value: 3 }, '/api/v0/auth/apikeys/'), { key: '<secret:14>', value: 3 });
    // Deep nesting is noted, not walked.
    let deep: unknown = 1;
    for (let i = 0; i < 500; i++) deep = { a: deep };
    assert.equal(r.json(deep, '/api/v0/x/'), '<not recorded: nested too deep>');
  });
});

/** The session a client runs: what it reveals (keys, password, an env secret) must never reach the file. */
async function clientSession(t: TestApp): Promise<{ secrets: string[] }> {
  const password = 'Chosen-Password-1234';
  const user = await t.request('POST', '/_emu/users', { body: { email: 'rec@example.com', password, credit: 50 } });
  assert.equal(user.status, 200, user.raw);
  const key = user.body.api_key as string;
  assert.equal((await t.request('GET', '/api/v0/users/current/', { key })).status, 200);
  const offers = await t.request('POST', '/api/v0/bundles/', { key, body: { rentable: { eq: true }, order: [['dph_total', 'asc']], limit: 3 } });
  assert.equal(offers.status, 200, offers.raw);
  const rented = await t.request('PUT', `/api/v0/asks/${offers.body.offers[0].id}/`, { key, body: { image: 'busybox', disk: 10, env: { HF_TOKEN: 'hf_rented_secret_123' } } });
  assert.equal(rented.status, 200, rented.raw);
  await t.advance(120);
  assert.equal((await t.request('GET', '/api/v0/instances/', { key })).status, 200);
  const created = await t.request('POST', '/api/v0/auth/apikeys/', { key, body: {} });
  assert.equal(created.status, 200, created.raw);
  const newKey = created.body.key as string;
  assert.equal((await t.request('GET', '/api/v0/users/current/', { key: newKey })).status, 200);
  assert.equal((await t.request('POST', '/api/v0/secrets/', { key: newKey, body: { key: 'WANDB_API_KEY', value: 'wandb-secret-value-987' } })).status, 200);
  assert.equal((await t.request('GET', '/api/v0/secrets/', { key: newKey })).status, 200);
  const login = await t.request('POST', '/api/v0/auth/login/', { key: null, body: { username: 'rec@example.com', password, client: 'cli' } });
  assert.equal(login.status, 200, login.raw);
  // An error is recorded too.
  assert.equal((await t.request('DELETE', '/api/v0/instances/999999/', { key })).status, 404);
  return { secrets: [OWNER_KEY, key, newKey, password, 'hf_rented_secret_123', 'wandb-secret-value-987', ...(login.body.session_key ? [login.body.session_key] : [])] };
}

async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

for (const dialect of DIALECTS) {
  describe(`record and replay [${dialect}]`, () => {
    let dir: string;
    let file: string;
    let recorded: TestApp;
    let secrets: string[];
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'gpuplane-recorder-'));
      file = join(dir, 'session.jsonl');
      recorded = await createTestApp(dialect, { config: { GPUPLANE_EMU_RECORD: file } });
      // Not recorded: probes, the OpenAPI document, a scheduled job's replayed request (none here).
      await recorded.request('GET', '/healthz', { key: null });
      await recorded.request('GET', '/api/v0/openapi.json');
      ({ secrets } = await clientSession(recorded));
    });
    after(async () => {
      await recorded?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('the file has a header, then every call in order, and no secret', () => {
      const text = readFileSync(file, 'utf8');
      for (const s of secrets) assert.ok(!text.includes(s), `the secret ${s.slice(0, 6)}… is not in the recording`);
      const lines = text.trim().split('\n').map((l) => JSON.parse(l));
      const header = lines[0] as RecordingHeader;
      assert.deepEqual({ ...header, started_at: undefined }, { format: 'gpuplane-emulator-recording', version: 1, started_at: undefined, clock: 'virtual', seed: 1, sim_machines: 20 });
      const calls = lines.slice(1) as RecordedCall[];
      assert.deepEqual(calls.map((c) => `${c.seq} ${c.method} ${c.path} ${c.status}`), [
        '1 POST /_emu/users 200', '2 GET /api/v0/users/current/ 200', '3 POST /api/v0/bundles/ 200',
        `4 PUT ${calls[3].path} 200`, '5 POST /_emu/clock/advance 200', '6 GET /api/v0/instances/ 200',
        '7 POST /api/v0/auth/apikeys/ 200', '8 GET /api/v0/users/current/ 200', '9 POST /api/v0/secrets/ 200',
        '10 GET /api/v0/secrets/ 200', '11 POST /api/v0/auth/login/ 200', '12 DELETE /api/v0/instances/999999/ 404',
      ]);
      // Every reply is recorded as JSON, offer search's pre-serialized bytes too.
      assert.deepEqual(calls.map((c) => c.reply_kind), calls.map(() => 'json'));
      assert.deepEqual(calls.map((c) => c.control), [true, false, false, false, true, false, false, false, false, false, false, false]);
      // The owner's key is secret 1, the user's key the reply revealed secret 2, and the client's later calls carry
      // the same placeholders; the key it created next is another.
      assert.deepEqual(calls[0].request, { headers: { authorization: 'Bearer <secret:1>', 'content-type': 'application/json' }, body: { email: 'rec@example.com', password: '<secret:2>', credit: 50 } });
      assert.equal((calls[0].reply as { api_key: string }).api_key, '<secret:3>');
      assert.equal(calls[1].request.headers.authorization, 'Bearer <secret:3>');
      assert.deepEqual((calls[3].request.body as { env: unknown }).env, { HF_TOKEN: '<secret:4>' });
      const newKey = (calls[6].reply as { key: string }).key;
      assert.match(newKey, /^<secret:\d+>$/);
      assert.equal(calls[7].request.headers.authorization, `Bearer ${newKey}`);
      assert.equal((calls[10].request.body as { password: string }).password, '<secret:2>');
      assert.equal(calls[11].reply_kind, 'json');
      assert.equal((calls[11].reply as { error: string }).error, 'no_such_instance');
      assert.ok(calls.every((c) => typeof c.ms === 'number' && c.at >= header.started_at));
    });

    test('replayed against a fresh emulator started the same: no difference', async () => {
      const fresh = await createTestApp(dialect);
      try {
        const url = await listen(fresh);
        const r = await runCli(['emu', 'replay', file, '--url', url, '--api-key', OWNER_KEY]);
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.equal(r.stdout.trim(), '12 calls replayed, 0 differ');
      } finally {
        await fresh.close();
      }
    });

    test('against another fleet (another seed): each difference at its place, exit 1, no secret shown', async () => {
      // Each replay on a fresh emulator of that other fleet: what the search answers there, then the CLI's report.
      const replayOnOther = async (args: string[]) => {
        const other = await createTestApp(dialect, { config: { GPUPLANE_SEED: '2' } });
        try {
          const direct = (await other.request('POST', '/api/v0/bundles/', { key: OWNER_KEY, body: { rentable: { eq: true }, order: [['dph_total', 'asc']], limit: 3 } })).body.offers as Record<string, unknown>[];
          const url = await listen(other);
          return { direct, r: await runCli(['emu', 'replay', file, '--url', url, '--api-key', OWNER_KEY, ...args]) };
        } finally {
          await other.close();
        }
      };
      const { direct, r } = await replayOnOther(['--raw']);
      assert.equal(r.code, 1, r.stderr);
      const report = JSON.parse(r.stdout);
      assert.equal(report.calls, 12);
      assert.ok(report.differing >= 1);
      // The search: the cheapest offers of another fleet are other machines; the path names each field that differs.
      const recordedOffers = (parseRecording(readFileSync(file, 'utf8')).calls[2].reply as { offers: Record<string, unknown>[] }).offers;
      const expected: string[] = [];
      for (let i = 0; i < 3; i++) {
        for (const k of Object.keys(recordedOffers[i])) {
          if (JSON.stringify(recordedOffers[i][k]) !== JSON.stringify(direct[i][k])) expected.push(`$.offers[${i}].${k}`);
        }
      }
      assert.ok(expected.length > 0, 'another seed gives other offers');
      const got = report.differences.filter((d: { seq: number }) => d.seq === 3).map((d: { where: string }) => d.where);
      assert.deepEqual(got, expected);
      const first = report.differences.find((d: { seq: number }) => d.seq === 3);
      const [, i, k] = /^\$\.offers\[(\d)\]\.(\w+)$/.exec(first.where)!;
      assert.deepEqual([first.recorded, first.got], [JSON.stringify(recordedOffers[Number(i)][k]), JSON.stringify(direct[Number(i)][k])]);
      const text = (await replayOnOther([])).r;
      assert.equal(text.code, 1);
      assert.match(text.stdout, new RegExp(`^12 calls replayed, ${report.differing} differs?\n`));
      assert.ok(text.stdout.includes(`#3 POST /api/v0/bundles/: ${first.where}: recorded ${first.recorded}, got ${first.got}\n`), text.stdout);
      assert.match(text.stdout, /note: answers repeat exactly on a fresh emulator started as the recorded one was: --clock virtual --clock-start \d+ --seed 1 --sim-machines 20/);
      for (const s of [...secrets, 'Replay_']) assert.ok(!r.stdout.includes(s) && !text.stdout.includes(s), 'no secret in the report');
    });
  });
}

describe('replay: how placeholders are filled and compared', () => {
  const call = (seq: number, method: string, path: string, request: RecordedCall['request'], reply: unknown, status = 200): RecordedCall => ({
    seq, at: 0, method, path, control: false, status, request, reply, reply_kind: 'json', reply_headers: {}, ms: 1,
  });
  /** A fake server: answers from `answers` in order; keeps what it was sent. */
  function fake(answers: { status?: number; body: unknown }[]) {
    const sent: { url: string; headers: Record<string, string>; body?: string }[] = [];
    const fetch = async (url: string, init?: RequestInit) => {
      sent.push({ url, headers: init?.headers as Record<string, string>, body: init?.body as string | undefined });
      const a = answers[sent.length - 1];
      return new Response(JSON.stringify(a.body), { status: a.status ?? 200, headers: { 'content-type': 'application/json' } });
    };
    return { sent, fetch };
  }
  const auth = (n: number) => ({ headers: { authorization: `Bearer <secret:${n}>` }, body: null });

  test('the first credential is the replay key; a revealed secret is read from the reply, inside a string too; others get one stand-in each', async () => {
    const calls = [
      call(1, 'POST', '/api/v0/auth/apikeys/', { headers: { authorization: 'Bearer <secret:1>', 'content-type': 'application/json' }, body: { password: '<secret:2>' } }, { key: '<secret:3>' }),
      call(2, 'GET', '/api/v0/instances/request_logs/1/', auth(3), { result_url: 'http://127.0.0.1:4000/api/v0/instances/logs/<secret:4>/' }),
      call(3, 'GET', '/api/v0/instances/logs/<secret:4>/', auth(3), { password_again: 'x' }),
      call(4, 'POST', '/api/v0/auth/login/', { headers: {}, body: { password: '<secret:2>' } }, { session_key: '<secret:3>' }),
    ];
    const f = fake([
      { body: { key: 'gpk_made_in_the_replay' } },
      { body: { result_url: 'http://127.0.0.1:5555/api/v0/instances/logs/tok%2Fen/' } },
      { body: { password_again: 'x' } },
      { body: { session_key: 'not_the_same_key' } },
    ]);
    const report = await replay(calls, null, { url: 'http://srv', apiKey: 'gpk_replayer', fetch: f.fetch });
    assert.equal(f.sent[0].headers.authorization, 'Bearer gpk_replayer');
    const standIn = JSON.parse(f.sent[0].body!).password;
    assert.match(standIn, /^Replay_0002_stand-in$/);
    assert.equal(f.sent[1].headers.authorization, 'Bearer gpk_made_in_the_replay');
    // The server's own URL may differ (another port); the token is read from its place, and sent encoded.
    assert.equal(f.sent[2].url, 'http://srv/api/v0/instances/logs/tok%2Fen/');
    assert.equal(JSON.parse(f.sent[3].body!).password, standIn);
    // A secret where the recording had another one (secret 3 was the created key): reported, never shown.
    assert.deepEqual(report.differences, [{ seq: 4, method: 'POST', path: '/api/v0/auth/login/', where: '$.session_key', recorded: '<secret:3>', got: 'a different secret' }]);
    assert.equal(report.differing, 1);
    assert.ok(!reportText(report).includes('not_the_same_key'));
  });

  test('a file appended to by a second server start: that start\'s first credential is the replay key again', async () => {
    const head = JSON.stringify({ format: 'gpuplane-emulator-recording', version: 1, started_at: 0, clock: 'virtual', seed: 1, sim_machines: 20 });
    const line = (seq: number, n: number) => JSON.stringify(call(seq, 'GET', '/api/v0/users/current/', auth(n), { id: 1 }));
    const parsed = parseRecording([head, line(1, 1), line(2, 1), head, line(3, 2), ''].join('\n'));
    assert.deepEqual([...parsed.sessionStarts], [0, 2]);
    const f = fake([{ body: { id: 1 } }, { body: { id: 1 } }, { body: { id: 1 } }]);
    const report = await replay(parsed.calls, parsed.header, { url: 'http://srv', apiKey: 'gpk_k', fetch: f.fetch, sessionStarts: parsed.sessionStarts });
    assert.deepEqual(f.sent.map((x) => x.headers.authorization), ['Bearer gpk_k', 'Bearer gpk_k', 'Bearer gpk_k']);
    assert.equal(report.differing, 0);
  });

  test('statuses, missing and extra fields, arrays, --ignore, and times left out for a real-clock recording', async () => {
    const calls = [call(1, 'GET', '/api/v0/instances/', auth(1), { instances: [{ id: 1, start_date: 100, label: 'a' }], extra: 1 })];
    const f = fake([{ status: 200, body: { instances: [{ id: 1, start_date: 200, label: 'b' }, { id: 2 }], more: true } }]);
    const virtual = await replay(calls, null, { url: 'http://srv', apiKey: 'k', fetch: f.fetch });
    assert.deepEqual(virtual.differences.map((d) => `${d.where}: ${d.recorded} → ${d.got}`), [
      '$.instances.length: 1 → 2', '$.instances[0].start_date: 100 → 200', '$.instances[0].label: "a" → "b"', '$.extra: 1 → (absent)', '$.more: (absent) → true',
    ]);
    const header: RecordingHeader = { format: 'gpuplane-emulator-recording', version: 1, started_at: 0, clock: 'real', seed: 1, sim_machines: 20 };
    const real = await replay(calls, header, { url: 'http://srv', apiKey: 'k', fetch: fake([{ body: { instances: [{ id: 1, start_date: 200, label: 'a' }], extra: 1 } }]).fetch });
    assert.deepEqual(real.differences, []);
    assert.equal(real.times_ignored, true);
    const ignoring = await replay(calls, null, { url: 'http://srv', apiKey: 'k', ignore: ['label', 'more', 'extra'], ignoreTimes: true, fetch: fake([{ status: 201, body: { instances: [{ id: 1, start_date: 200, label: 'b' }] } }]).fetch });
    assert.deepEqual(ignoring.differences.map((d) => `${d.where}: ${d.recorded} → ${d.got}`), ['status: 200 → 201']);
  });
});

describe('what is not recorded', () => {
  test('the emulator\'s whole state (emu save, emu restore) is recorded without its document; probes not at all', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-recorder-state-'));
    const file = join(dir, 'state.jsonl');
    const t = await createTestApp('sqlite', { config: { GPUPLANE_EMU_RECORD: file } });
    try {
      const saved = await t.request('GET', '/_emu/state');
      assert.equal(saved.status, 200, saved.raw);
      const restored = await t.request('PUT', '/_emu/state', { body: saved.body });
      await t.request('GET', '/readyz', { key: null });
      const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.deepEqual(lines.slice(1).map((c: RecordedCall) => [c.method, c.path, c.status, c.request.body, c.reply, c.reply_kind]), [
        ['GET', '/_emu/state', 200, null, null, 'omitted'],
        ['PUT', '/_emu/state', restored.status, null, null, 'omitted'],
      ]);
      assert.ok(!readFileSync(file, 'utf8').includes('"rows"'));
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('replay: bad input', () => {
  test('a file that is not a recording, or not there: exit 2 naming the line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuplane-recorder-bad-'));
    try {
      const bad = join(dir, 'bad.jsonl');
      writeFileSync(bad, '{"format":"gpuplane-emulator-recording","version":1,"started_at":0,"clock":"virtual","seed":1,"sim_machines":20}\n{"hello": 1}\n');
      let r = await runCli(['emu', 'replay', bad, '--url', 'http://127.0.0.1:9']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /bad\.jsonl: line 2: not a recorded call of gpuplane-emulator-recording/);
      writeFileSync(bad, 'not json\n');
      r = await runCli(['emu', 'replay', bad, '--url', 'http://127.0.0.1:9']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /line 1: not JSON/);
      writeFileSync(bad, '{"format":"gpuplane-emulator-recording","version":9}\n');
      r = await runCli(['emu', 'replay', bad, '--url', 'http://127.0.0.1:9']);
      assert.match(r.stderr, /recording version 9, this gpuplane reads version 1/);
      r = await runCli(['emu', 'replay', join(dir, 'absent.jsonl'), '--url', 'http://127.0.0.1:9']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /cannot read .*absent\.jsonl: ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

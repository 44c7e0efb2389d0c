// Every hint the CLI prints is a command that works at that point: each scenario below makes the CLI print hints
// (in backquotes, `gpuplane …`), fills in their UPPERCASE placeholders and runs them (in the test's process) against a
// real server (virtual clock). Server messages name HTTP routes; the CLI shows its own commands instead, and a static
// check keeps that true for every route a message of src/ names. The help lists only commands that exist.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram, runCli as runCliIn } from '../src/cli/program.js';
import { inCliWords, ROUTE_COMMANDS } from '../src/cli/hints.js';
import { createClient } from '../src/sdk/client.js';
import { totpCode } from '../src/tfa/totp.js';
import { instanceSteps, OWNER_KEY, ROOT, tempConfigHome, useServer, type CliResult } from './cli-helpers.js';

const server = useServer();
const sdk = (apiKey = OWNER_KEY) => createClient({ url: server.url(), apiKey });
const PASSWORD = 'correct horse battery';
let n = 0;
const email = (what: string) => `cli-hints-${what}-${process.pid}-${n++}@example.com`;
const now = async () => (await sdk().emulator.clock()).now;
const lastCode = async (to: string, channel: 'email' | 'sms' = 'email') => {
  const code = (await sdk().emulator.outbox({ to, channel })).messages.at(-1)?.code;
  assert.ok(code, `a code was sent to ${to}`);
  return code;
};

/** The placeholders hints use; a test names the value of each one its hints contain. */
const PLACEHOLDERS = ['CODE', 'SECRET', 'KEY', 'EMAIL', 'ID', 'NAME', 'PHONE', 'SECONDS', 'BACKUP_CODE', 'TEAM_ID', 'PUBLIC_KEY_FILE'];
const ROUTE = /\b(GET|POST|PUT|DELETE) \/(api|_emu)\//;

/** The commands hinted in `text`, without their `gpuplane`. */
function hintsIn(text: string): string[] {
  return [...text.matchAll(/`gpuplane ([^`]+)`/g)].map((m) => m[1]);
}

/** Runs a hinted command with its placeholders filled in (a placeholder without a value fails the test). */
function run(hint: string, fill: Record<string, string>, env: Record<string, string | undefined>, input?: string): Promise<CliResult> {
  const words = hint.split(' ').map((w) => {
    if (!PLACEHOLDERS.includes(w)) return w;
    assert.ok(fill[w] !== undefined, `a value for ${w} in \`gpuplane ${hint}\``);
    return fill[w];
  });
  return server.cli(words, env, undefined, input);
}

async function ok(r: Promise<CliResult> | CliResult, what: string): Promise<CliResult> {
  const res = await r;
  assert.equal(res.code, 0, `${what}: ${res.stderr}${res.stdout}`);
  return res;
}

/** A user with a password and its own config directory; `env` runs the CLI as that user. */
async function newUser(extra: Record<string, unknown> = {}) {
  const addr = email('user');
  const u = await sdk().emulator.createUser({ email: addr, password: PASSWORD, ...extra });
  const home = tempConfigHome();
  return { ...u, email: addr, home, env: { GPUPLANE_API_KEY: u.api_key, XDG_CONFIG_HOME: home.dir } };
}

describe('hints name CLI commands, never HTTP routes', () => {
  test('every route a server or SDK message names has a CLI command in its place', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : f.endsWith('.ts') ? [join(dir, f)] : []));
    let messages = 0;
    // audit-actions.ts is a table keyed by route (what the audit log records), not messages.
    const notMessages = (f: string) => f.includes(`${join('src', 'cli')}`) || f.endsWith(join('audit', 'audit-actions.ts'));
    for (const file of files(join(ROOT, 'src')).filter((f) => !notMessages(f))) {
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        // Messages, not comments, API documentation (summaries, descriptions), the text of e-mails, or the route an
        // audit record names (`route:`, `AUDIT_ROUTE =`, as audit-actions.ts's table does).
        if (!ROUTE.test(line) || /^\s*(\/\/|\*|\/\*)/.test(line) || /\b((summary|description|text|route):|AUDIT_ROUTE =)/.test(line)) continue;
        messages++;
        assert.doesNotMatch(inCliWords(line), ROUTE, `${file}: a message names a route the CLI cannot name: ${line.trim()}`);
      }
    }
    assert.ok(messages >= 10, 'the scan found the messages');
  });

  test('every command the route table names exists, with those options', () => {
    const program = buildProgram();
    for (const text of Object.values(ROUTE_COMMANDS)) {
      for (const hint of hintsIn(text)) {
        let c: Command = program;
        const words = hint.split(' ');
        for (let sub = c.commands.find((s) => s.name() === words[0]); sub; sub = c.commands.find((s) => s.name() === words[0])) {
          c = sub;
          words.shift();
        }
        assert.equal(c.commands.length, 0, `\`${hint}\` names a command`);
        let positional = 0;
        while (words.length) {
          const w = words.shift()!;
          if (!w.startsWith('-')) {
            positional++;
            continue;
          }
          const opt = c.options.find((o) => o.long === w || o.short === w);
          assert.ok(opt, `\`${hint}\`: ${w} is an option of ${c.name()}`);
          if (opt.required || opt.optional) words.shift();
        }
        assert.ok(positional <= c.registeredArguments.length, `\`${hint}\`: at most ${c.registeredArguments.length} arguments`);
      }
    }
  });

  test('a group lists only commands it has (`tfa methods` does not exist)', () => {
    const groups: Command[] = [];
    (function walk(c: Command) {
      if (c.commands.length) groups.push(c);
      c.commands.forEach(walk);
    })(buildProgram());
    for (const g of groups.slice(1)) {
      const listed = /:\s*([a-z-]+(?:,\s*[a-z-]+)*)$/.exec(g.description());
      if (!listed) continue;
      for (const name of listed[1].split(/,\s*/)) assert.ok(g.commands.some((s) => s.name() === name), `${g.name()} lists ${name}, which it does not have`);
    }
  });
});

describe('the hints work where they are printed', () => {
  test('no key: the 401 hint saves one', async () => {
    const home = tempConfigHome();
    try {
      const env = { GPUPLANE_API_KEY: undefined, XDG_CONFIG_HOME: home.dir };
      const r = await server.cli(['show', 'user'], env);
      assert.equal(r.code, 1);
      const [save] = hintsIn(r.stderr);
      assert.equal(save, 'set api-key KEY');
      await ok(run(save, { KEY: OWNER_KEY }, env), save);
      await ok(server.cli(['show', 'user'], env), 'the saved key is used');
    } finally {
      home.cleanup();
    }
  });

  test('sign-up, then an unverified login: the verify-email hints', async () => {
    const addr = email('signup');
    const noKey = { GPUPLANE_API_KEY: undefined };
    const created = await ok(server.cli(['create', 'account', '--email', addr, '--password-stdin'], noKey, undefined, PASSWORD), 'create account');
    const login = await server.cli(['login', '--username', addr, '--password-stdin'], noKey, undefined, PASSWORD);
    assert.equal(login.code, 1, 'the address is not verified yet');
    assert.doesNotMatch(login.stderr, ROUTE);
    const [verify, resend] = hintsIn(login.stderr);
    assert.equal(resend, 'verify email --email EMAIL --resend');
    await ok(run(resend, { EMAIL: addr }, noKey), resend);
    assert.deepEqual(hintsIn(created.stdout), [`verify email --email ${addr} --code CODE`]);
    assert.equal(verify, 'verify email --email EMAIL --code CODE');
    await ok(run(verify, { EMAIL: addr, CODE: await lastCode(addr) }, noKey), verify);
    const home = tempConfigHome();
    try {
      await ok(server.cli(['login', '--username', addr, '--password-stdin'], { ...noKey, XDG_CONFIG_HOME: home.dir }, undefined, PASSWORD), 'login');
    } finally {
      home.cleanup();
    }
  });

  test('adding an authenticator app: totp-setup, the refused activate, authorize, authorize-finish, activate; then the 2FA login', async () => {
    const u = await newUser();
    const homes: ReturnType<typeof tempConfigHome>[] = [];
    try {
      const setup = await ok(server.cli(['tfa', 'totp-setup'], u.env), 'totp-setup');
      const totp = /enter the secret: (\S+)/.exec(setup.stdout)![1];
      assert.deepEqual(hintsIn(setup.stdout), ['tfa authorize', `tfa activate CODE --secret ${totp}`]);
      const [authorize, activate] = hintsIn(setup.stdout);

      // Activating before authorizing is refused; the error says how to authorize, in CLI words.
      const early = await run(activate, { CODE: totpCode(totp, await now()) }, u.env);
      assert.equal(early.code, 1);
      assert.doesNotMatch(early.stderr, ROUTE);
      assert.deepEqual(hintsIn(early.stderr), ['tfa authorize', 'tfa authorize-finish --code CODE --secret SECRET']);

      const auth = await ok(run(authorize, {}, u.env), authorize);
      const [finish] = hintsIn(auth.stdout);
      const secret = /--secret (\S+)$/.exec(finish)![1];
      assert.equal(finish, `tfa authorize-finish --code CODE --secret ${secret}`);
      await ok(run(hintsIn(early.stderr)[1], { CODE: await lastCode(u.email), SECRET: secret }, u.env), 'authorize-finish');

      // Authorized: a wrong secret names totp-setup; the hinted activate adds the method.
      const bad = await server.cli(['tfa', 'activate', '123456', '--secret', 'not-base32!'], u.env);
      assert.equal(bad.code, 1);
      assert.deepEqual(hintsIn(bad.stderr), ['tfa totp-setup']);
      await ok(run('tfa totp-setup', {}, u.env), 'tfa totp-setup');
      const added = await ok(run(activate, { CODE: totpCode(totp, await now()) }, u.env), activate);
      const backup = [...added.stdout.matchAll(/^ {2}([A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4})$/gm)].map((m) => m[1]);
      assert.equal(backup.length, 10);

      // The window is still open: totp-setup now hints activate alone.
      const again = await ok(server.cli(['tfa', 'totp-setup'], u.env), 'totp-setup');
      const totp2 = /enter the secret: (\S+)/.exec(again.stdout)![1];
      assert.deepEqual(hintsIn(again.stdout), [`tfa activate CODE --secret ${totp2}`]);
      await ok(run(hintsIn(again.stdout)[0], { CODE: totpCode(totp2, await now()) }, u.env), 'activate');

      // Login: each hinted way of giving the second factor completes it (logged out: no key, nothing saved yet).
      const loggedOut = () => {
        const home = tempConfigHome();
        homes.push(home);
        return { GPUPLANE_API_KEY: undefined, XDG_CONFIG_HOME: home.dir };
      };
      const login = async (env: Record<string, string | undefined>) =>
        hintsIn((await ok(server.cli(['login', '--username', u.email, '--password-stdin'], env, undefined, PASSWORD), 'login')).stdout);
      const a = loggedOut();
      const ways = await login(a);
      assert.equal(ways.length, 4, ways.join('\n'));
      assert.match(ways[0], /^tfa login --secret \S+ --method totp --code CODE$/);
      await sdk().emulator.advance(30); // a fresh TOTP step: each code works once
      await ok(run(ways[0], { CODE: totpCode(totp, await now()) }, a), ways[0]);

      const b = loggedOut();
      const [sendEmail, byEmail] = (await login(b)).slice(1, 3);
      assert.match(sendEmail, /^tfa send-email --secret \S+$/);
      await ok(run(sendEmail, {}, b), sendEmail);
      await ok(run(byEmail, { CODE: await lastCode(u.email) }, b), byEmail);

      const c = loggedOut();
      const byBackup = (await login(c))[3];
      assert.match(byBackup, /^tfa login --secret \S+ --backup-code BACKUP_CODE$/);
      await ok(run(byBackup, { BACKUP_CODE: backup[0] }, c), byBackup);
    } finally {
      u.home.cleanup();
      for (const h of homes) h.cleanup();
    }
  });

  test('authorize-finish with an unknown secret names tfa authorize', async () => {
    const u = await newUser();
    try {
      const r = await server.cli(['tfa', 'authorize-finish', '--code', '123456', '--secret', 'tfa_unknown'], u.env);
      assert.equal(r.code, 1);
      assert.deepEqual(hintsIn(r.stderr), ['tfa authorize']);
      await ok(run('tfa authorize', {}, u.env), 'tfa authorize');
    } finally {
      u.home.cleanup();
    }
  });

  test('SMS: a resend of a code never sent names send-sms; a second send names the resend', async () => {
    const phone = '+14155550123';
    const u = await newUser({ phone_number: phone });
    try {
      const mail = JSON.parse((await ok(server.cli(['tfa', 'send-email', '--raw'], u.env), 'send-email')).stdout);
      const never = await server.cli(['tfa', 'send-sms', '--resend', '--secret', mail.secret], u.env);
      assert.equal(never.code, 1);
      const [send] = hintsIn(never.stderr);
      assert.equal(send, 'tfa send-sms --phone-number PHONE');
      const sent = await ok(run(send, { PHONE: phone }, u.env), send);
      const smsSecret = /^secret: (\S+)$/m.exec(sent.stdout)![1];

      const twice = await run(send, { PHONE: phone }, u.env);
      assert.equal(twice.code, 1);
      const [resend] = hintsIn(twice.stderr);
      assert.equal(resend, 'tfa send-sms --resend --secret SECRET');
      await sdk().emulator.advance(30); // resends are spaced (SMS_RESEND_MIN_INTERVAL_S)
      await ok(run(resend, { SECRET: smsSecret }, u.env), resend);
    } finally {
      u.home.cleanup();
    }
  });

  test('no team: the hint creates one; logout with an API key: the hint deletes API keys', async () => {
    const u = await newUser();
    try {
      const members = await server.cli(['show', 'members'], u.env);
      assert.equal(members.code, 1);
      const [create] = hintsIn(members.stderr);
      assert.equal(create, 'create team --team_name NAME');
      await ok(run(create, { NAME: 'hinted' }, u.env), create);
      await ok(server.cli(['show', 'members'], u.env), 'show members');

      const key = JSON.parse((await ok(server.cli(['create', 'api-key', '--name', 'spare', '--raw'], u.env), 'create api-key')).stdout);
      const out = await server.cli(['logout'], { ...u.env, GPUPLANE_API_KEY: key.key });
      assert.equal(out.code, 1);
      const [del] = hintsIn(out.stderr);
      assert.equal(del, 'delete api-key ID');
      await ok(run(del, { ID: String(key.id) }, u.env), del);
    } finally {
      u.home.cleanup();
    }
  });

  test('a page of charges names the command for the next page, which shows the same listing', async () => {
    const u = await newUser({ credit: 50 });
    try {
      const { offers } = await sdk(u.api_key).offers.search({ num_gpus: { eq: 1 }, rentable: { eq: true }, rented: { eq: false }, limit: 2 });
      for (const o of offers) await sdk(u.api_key).instances.create(o.id, { image: 'alpine' });
      await sdk().emulator.advance(3600);
      const t = await now();
      const first = await ok(server.cli(['show', 'charges', '-s', String(t - 86_400), '-e', String(t + 60), '--limit', '1'], u.env), 'show charges');
      const [next] = hintsIn(first.stdout);
      assert.match(next, /^show charges -s \S+ -e \S+ --limit 1 --next-token \S+$/);
      const second = await ok(run(next, {}, u.env), next);
      assert.match(second.stdout, /^1 of 2 contracts/m);
      assert.deepEqual(hintsIn(second.stdout), [], 'the last page');
    } finally {
      u.home.cleanup();
    }
  });

  test('Ctrl-C during create instance --wait: the instance goes on, and the hint waits for it again (exit 130)', async () => {
    const { offer, waitWhileAdvancing } = instanceSteps(server);
    const home = tempConfigHome();
    try {
      // The run's interrupt, fired once the wait shows its status line (it is subscribed to the server's events then).
      let interrupt: (() => void) | undefined;
      let stderr = '';
      let stdout = '';
      const code = await runCliIn(['create', 'instance', String(await offer()), '--image', 'alpine', '--ssh', '--direct', '--wait', '--timeout', '120'], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: {
          write: (t: string) => {
            stderr += t;
            if (/^instance \d+: \S+ \(\d+s\)$/m.test(stderr)) interrupt?.();
          },
        },
        stdin: process.stdin,
        env: { GPUPLANE_URL: server.url(), GPUPLANE_API_KEY: OWNER_KEY, XDG_CONFIG_HOME: home.dir },
        onInterrupt: (listener) => {
          interrupt = listener;
          return () => (interrupt = undefined);
        },
      });
      assert.equal(code, 130, stderr);
      const id = Number(/created instance (\d+)/.exec(stdout)![1]);
      assert.match(stderr, new RegExp(`stopped waiting; instance ${id} goes on as before`));
      const [resume] = hintsIn(stderr);
      assert.equal(resume, `wait instance ${id} --until running --timeout 120`);
      assert.equal((await sdk().instances.show(id)).intended_status, 'running', 'the interrupt stopped the wait, not the instance');
      const waited = await waitWhileAdvancing(resume.split(' '));
      assert.equal(waited.code, 0, waited.stderr);
      assert.match(waited.stdout, new RegExp(`^instance ${id} is running`, 'm'));
    } finally {
      home.cleanup();
    }
  });

  test('a query naming an unknown field points to the help, which lists the fields', async () => {
    const r = await server.cli(['search', 'offers', 'gpu_nam=RTX_4090']);
    assert.equal(r.code, 2);
    const [help] = hintsIn(r.stderr);
    assert.equal(help, 'search offers --help');
    const h = await ok(run(help, {}, {}), help);
    assert.match(h.stdout, /gpu_name/);
  });
});

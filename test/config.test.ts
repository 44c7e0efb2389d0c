// Configuration (contract §1): every variable, its default, its `gpuplane serve --flag` mirror, and a clear start-up
// error naming the variable when a value is bad.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig, parseServeFlags, SETTINGS, type Config } from '../src/config.js';

/** A production secret long enough to pass validation. */
const SECRET = 'production-secret-0123456789';

describe('config: defaults (contract §1)', () => {
  test('an empty environment gives the contract defaults', () => {
    const c = loadConfig({});
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8080);
    assert.equal(c.databaseUrl, 'sqlite:./data/gpuplane.db');
    assert.equal(c.mode, 'emulator');
    assert.equal(c.bootstrapApiKey, undefined);
    assert.equal(c.clock, 'real');
    assert.equal(c.clockStart, undefined);
    assert.equal(c.seed, 1);
    assert.equal(c.simMachines, 200);
    assert.deepEqual(c.simBootSeconds, { min: 5, max: 20 });
    assert.equal(c.secretKey, undefined);
    assert.equal(c.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(c.logLevel, 'info');
    assert.equal(c.logFormat, 'auto');
    assert.equal(c.metricsToken, undefined);
    assert.equal(c.agentOfflineAfter, 30);
    assert.equal(c.pgPoolSize, undefined, 'the pool follows the CPU cores (connect.ts defaultPoolSize)');
    assert.equal(c.maxConnections, undefined, 'the total cap follows the open-file limit (connection-limits.ts defaultMaxConnections)');
    assert.equal(c.maxConnectionsPerSource, 512);
    assert.deepEqual(c.connectionLimitExempt, ['127.0.0.0/8', '::1']);
    assert.equal(c.headersTimeout, 20);
    assert.equal(c.requestTimeout, 60);
    assert.deepEqual(loadConfig({ GPUPLANE_CONNECTION_LIMIT_EXEMPT: 'none' }).connectionLimitExempt, [], 'none: loopback capped too');
    // Offer search answers without a key, as Vast.ai's does (issue 29 item 1), at 60 searches a minute per address.
    assert.equal(c.offerSearchRequiresKey, false);
    assert.equal(c.anonymousSearchesPerMinute, 60);
    // The SSH gateway (README "Connecting to an instance"): on, on the listen address, ports 10000-65535, renters sent
    // to the public URL's host.
    assert.equal(c.gateway, true);
    assert.equal(c.gatewayBind, '127.0.0.1');
    assert.deepEqual(c.gatewayPorts, { first: 10000, last: 65535 });
    assert.equal(c.gatewayHost, '127.0.0.1');
    assert.equal(c.gatewayFailedLogins, 10);
    assert.equal(c.gatewayFailedLoginWindow, 600);
    assert.equal(c.gatewayBlockSeconds, 900);
    assert.equal(c.gatewayConnectionsPerSource, 64);
    assert.equal(c.portUrls, 'http://*.localhost:8080');
  });

  test('the gateway follows the listen address and the public URL unless set', () => {
    const c = loadConfig({ GPUPLANE_HOST: '0.0.0.0', GPUPLANE_PUBLIC_URL: 'https://gpu.example.com:8443/' });
    assert.equal(c.gatewayBind, '0.0.0.0');
    assert.equal(c.gatewayHost, 'gpu.example.com');
    assert.equal(loadConfig({ GPUPLANE_HOST: '::1' }).gatewayHost, '::1', 'an IPv6 public host without its brackets');
  });

  test('the public URL follows host and port unless set', () => {
    assert.equal(loadConfig({ GPUPLANE_HOST: '0.0.0.0', GPUPLANE_PORT: '9000' }).publicUrl, 'http://0.0.0.0:9000');
    assert.equal(loadConfig({ GPUPLANE_HOST: '::1' }).publicUrl, 'http://[::1]:8080');
    assert.equal(loadConfig({ GPUPLANE_PUBLIC_URL: 'https://gpu.example.com/' }).publicUrl, 'https://gpu.example.com');
  });

  test('an empty variable counts as unset', () => {
    assert.equal(loadConfig({ GPUPLANE_PORT: '' }).port, 8080);
  });
});

/** For every setting: a valid raw value and the Config it must produce. */
const VALID: { [K in keyof Config]: [string, Partial<Config>] } = {
  host: ['0.0.0.0', { host: '0.0.0.0' }],
  port: ['0', { port: 0 }],
  databaseUrl: ['postgres://gp:pw@db.internal:5433/gpuplane', { databaseUrl: 'postgres://gp:pw@db.internal:5433/gpuplane' }],
  mode: ['production', { mode: 'production' }],
  bootstrapApiKey: ['gpk_bootstrap_0123456789', { bootstrapApiKey: 'gpk_bootstrap_0123456789' }],
  clock: ['virtual', { clock: 'virtual' }],
  clockStart: ['1800000000.5', { clockStart: 1_800_000_000.5 }],
  seed: ['42', { seed: 42 }],
  simMachines: ['7', { simMachines: 7 }],
  simBootSeconds: ['60-300', { simBootSeconds: { min: 60, max: 300 } }],
  secretKey: [SECRET, { secretKey: SECRET }],
  publicUrl: ['https://gpu.example.com', { publicUrl: 'https://gpu.example.com' }],
  hopUrl: ['http://10.0.0.5:8080/', { hopUrl: 'http://10.0.0.5:8080' }],
  sqliteSync: ['full', { sqliteSync: 'full' }],
  shutdownTimeout: ['3', { shutdownTimeout: 3 }],
  auditRetentionDays: ['30', { auditRetentionDays: 30 }],
  logLevel: ['warn', { logLevel: 'warn' }],
  logFormat: ['pretty', { logFormat: 'pretty' }],
  metricsToken: ['scrape-token-0123456789', { metricsToken: 'scrape-token-0123456789' }],
  smtpUrl: ['smtps://u:p@mail.example.com:465', { smtpUrl: 'smtps://u:p@mail.example.com:465' }],
  smtpFrom: ['ops@example.com', { smtpFrom: 'ops@example.com' }],
  smsUrl: ['https://sms.example.com/v1', { smsUrl: 'https://sms.example.com/v1' }],
  smsAccount: ['AC123', { smsAccount: 'AC123' }],
  smsToken: ['tok_456', { smsToken: 'tok_456' }],
  agentOfflineAfter: ['45', { agentOfflineAfter: 45 }],
  hostMachinesMax: ['50', { hostMachinesMax: 50 }],
  hostRegistrationsPerHour: ['7', { hostRegistrationsPerHour: 7 }],
  eventStreamsPerUser: ['3', { eventStreamsPerUser: 3 }],
  hostServiceFee: ['0.25', { hostServiceFee: 0.25 }],
  consoleDir: ['/srv/gpuplane/console', { consoleDir: '/srv/gpuplane/console' }],
  trustProxy: ['true', { trustProxy: true }],
  pgPoolSize: ['6', { pgPoolSize: 6 }],
  maxConnections: ['5000', { maxConnections: 5000 }],
  maxConnectionsPerSource: ['0', { maxConnectionsPerSource: 0 }],
  connectionLimitExempt: ['10.0.0.5, 192.168.0.0/16,2001:db8::/32', { connectionLimitExempt: ['10.0.0.5', '192.168.0.0/16', '2001:db8::/32'] }],
  headersTimeout: ['5', { headersTimeout: 5 }],
  requestTimeout: ['300', { requestTimeout: 300 }],
  offerSearchRequiresKey: ['true', { offerSearchRequiresKey: true }],
  anonymousSearchesPerMinute: ['120', { anonymousSearchesPerMinute: 120 }],
  blobStoreUrl: ['https://AKIA:se%2Fcret@s3.example.com/tarballs?region=eu-west-1', { blobStoreUrl: 'https://AKIA:se%2Fcret@s3.example.com/tarballs?region=eu-west-1' }],
  gateway: ['false', { gateway: false }],
  gatewayBind: ['0.0.0.0', { gatewayBind: '0.0.0.0' }],
  gatewayPorts: ['20000-20299', { gatewayPorts: { first: 20000, last: 20299 } }],
  gatewayHost: ['ssh.gpu.example.com', { gatewayHost: 'ssh.gpu.example.com' }],
  gatewayFailedLogins: ['3', { gatewayFailedLogins: 3 }],
  gatewayFailedLoginWindow: ['60', { gatewayFailedLoginWindow: 60 }],
  gatewayBlockSeconds: ['120', { gatewayBlockSeconds: 120 }],
  gatewayConnectionsPerSource: ['8', { gatewayConnectionsPerSource: 8 }],
  portUrls: ['https://*.ports.example.com/', { portUrls: 'https://*.ports.example.com' }],
  stopGraceSeconds: ['45', { stopGraceSeconds: 45 }],
  emuContainers: ['docker', { emuContainers: 'docker' }],
  emuState: ['/tmp/world.json', { emuState: '/tmp/world.json' }],
  emuSeedFile: ['/tmp/seed.json', { emuSeedFile: '/tmp/seed.json' }],
  emuInitDir: ['/tmp/init.d', { emuInitDir: '/tmp/init.d' }],
  emuRecord: ['/tmp/calls.jsonl', { emuRecord: '/tmp/calls.jsonl' }],
};

describe('config: every variable, and its flag mirror', () => {
  // Production needs a secret key; give it one so that `mode` can be tested on its own.
  const base = (name: keyof Config) => (name === 'mode' ? { GPUPLANE_SECRET_KEY: SECRET } : {});

  test('the table above covers every setting', () => {
    assert.deepEqual(Object.keys(VALID).sort(), Object.keys(SETTINGS).sort());
  });

  for (const [name, [raw, expected]] of Object.entries(VALID) as [keyof Config, [string, Partial<Config>]][]) {
    const s = SETTINGS[name];
    test(`${s.env} and --${s.flag}`, () => {
      const fromEnv = loadConfig({ ...base(name), [s.env]: raw });
      const fromFlag = loadConfig(base(name), parseServeFlags([`--${s.flag}`, raw]));
      for (const [field, value] of Object.entries(expected)) {
        assert.deepEqual(fromEnv[field as keyof Config], value, `${s.env} sets ${field}`);
        assert.deepEqual(fromFlag[field as keyof Config], value, `--${s.flag} sets ${field}`);
      }
    });
  }

  test('a flag wins over its variable', () => {
    const c = loadConfig({ GPUPLANE_PORT: '9000', GPUPLANE_MODE: 'production', GPUPLANE_SECRET_KEY: SECRET }, parseServeFlags(['--port=9100', '--mode', 'emulator']));
    assert.equal(c.port, 9100);
    assert.equal(c.mode, 'emulator');
  });

  test('an unknown flag is a configuration error naming it', () => {
    assert.throws(() => parseServeFlags(['--prot', '80']), (e: Error) => e instanceof ConfigError && e.message.includes('--prot'));
  });

  test('a PostgreSQL URL choosing its schema through ?options= is accepted as given', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3Dtenant_a';
    assert.equal(loadConfig({ GPUPLANE_DATABASE_URL: url }).databaseUrl, url);
    assert.equal(loadConfig({ GPUPLANE_DATABASE_URL: 'postgresql://db/x' }).databaseUrl, 'postgresql://db/x');
    assert.equal(loadConfig({ GPUPLANE_DATABASE_URL: 'sqlite::memory:' }).databaseUrl, 'sqlite::memory:');
  });
});

/** Bad values: each must fail at start with a message naming the variable (and its flag). */
const BAD: [keyof Config, string, Record<string, string>?][] = [
  ['pgPoolSize', '0'],
  ['pgPoolSize', 'ten'],
  ['pgPoolSize', '1001'],
  ['blobStoreUrl', 's3://bucket'],
  ['blobStoreUrl', 'not a url'],
  ['hostServiceFee', '1.5'],
  ['hostServiceFee', '-0.1'],
  ['hostServiceFee', 'ten percent'],
  ['trustProxy', 'yes'],
  ['maxConnections', '0'],
  ['maxConnectionsPerSource', 'many'],
  ['connectionLimitExempt', '10.0.0.0/33'],
  ['connectionLimitExempt', 'proxy.internal'],
  ['connectionLimitExempt', '10.0.0.5,'],
  ['headersTimeout', '0'],
  ['requestTimeout', '10'],
  ['offerSearchRequiresKey', 'yes'],
  ['anonymousSearchesPerMinute', '0'],
  ['anonymousSearchesPerMinute', 'many'],
  ['gateway', 'on'],
  ['gatewayPorts', '10000'],
  ['gatewayPorts', '10000-10001'],
  ['gatewayPorts', '60000-70000'],
  ['gatewayPorts', '0-100'],
  ['gatewayHost', 'ssh host'],
  ['gatewayFailedLogins', '0'],
  ['gatewayBlockSeconds', 'long'],
  ['gatewayConnectionsPerSource', '0'],
  ['portUrls', 'https://ports.example.com'],
  ['portUrls', 'ftp://*.example.com'],
  ['port', 'http'],
  ['port', '65536'],
  ['port', '-1'],
  ['port', '80.5'],
  ['databaseUrl', 'mysql://db/gpuplane'],
  ['databaseUrl', 'postgres://'],
  ['databaseUrl', 'postgres://u@host:notaport/db'],
  ['databaseUrl', 'sqlite:'],
  ['databaseUrl', './data/gpuplane.db'],
  ['mode', 'staging'],
  ['clock', 'fast'],
  ['clockStart', 'yesterday'],
  ['clockStart', '-5'],
  ['seed', 'abc'],
  ['seed', '-1'],
  ['simMachines', 'many'],
  ['simBootSeconds', '20-5'],
  ['simBootSeconds', 'soon'],
  ['secretKey', 'short'],
  ['publicUrl', 'ftp://files.example.com'],
  ['publicUrl', 'not a url'],
  ['logLevel', 'loud'],
  ['logFormat', 'colour'],
  ['metricsToken', 'short'],
  ['smtpUrl', 'http://mail.example.com'],
  ['smsUrl', 'sms.example.com'],
  ['bootstrapApiKey', 'short'],
];

describe('config: bad values fail at start, naming the variable', () => {
  for (const [name, raw] of BAD) {
    const s = SETTINGS[name];
    test(`${s.env}=${JSON.stringify(raw)}`, () => {
      for (const attempt of [() => loadConfig({ [s.env]: raw }), () => loadConfig({}, parseServeFlags([`--${s.flag}=${raw}`]))]) {
        assert.throws(attempt, (e: Error) => {
          assert.ok(e instanceof ConfigError, `a ConfigError, got ${e}`);
          assert.ok(e.message.includes(s.env), `names ${s.env}: ${e.message}`);
          assert.ok(e.message.includes(`--${s.flag}`), `names --${s.flag}: ${e.message}`);
          return true;
        });
      }
    });
  }

  test('a rejected secret is never echoed; other values are', () => {
    const secrets: [string, string][] = [
      ['GPUPLANE_SECRET_KEY', 'tooshort-s3cr'],
      ['GPUPLANE_BOOTSTRAP_API_KEY', 'tooshort-b00t'],
      ['GPUPLANE_METRICS_TOKEN', 'tooshort-m3tr'],
      ['GPUPLANE_SMTP_URL', 'http://u:hunter2pw@mail'],
      ['GPUPLANE_DATABASE_URL', 'mysql://u:hunter2pw@db/x'],
      ['GPUPLANE_BLOB_STORE_URL', 's3://AKIA:hunter2pw@bucket'],
    ];
    for (const [env, raw] of secrets) {
      assert.throws(() => loadConfig({ [env]: raw }), (e: Error) => {
        assert.ok(e.message.includes(env), e.message);
        assert.ok(!e.message.includes(raw) && !e.message.includes('hunter2pw'), `${env} echoed: ${e.message}`);
        assert.match(e.message, /got a value of \d+ characters/);
        return true;
      });
    }
    assert.throws(() => loadConfig({ GPUPLANE_PORT: 'http' }), /got "http"/);
  });

  test('the emulator settings are refused in production mode, naming the setting (issue 34)', () => {
    const prod = { GPUPLANE_MODE: 'production', GPUPLANE_SECRET_KEY: 'x'.repeat(32) };
    for (const [env, value] of [['GPUPLANE_EMU_CONTAINERS', 'docker'], ['GPUPLANE_EMU_STATE', 'w.json'], ['GPUPLANE_EMU_SEED_FILE', 's.json'], ['GPUPLANE_EMU_INIT_DIR', 'init'], ['GPUPLANE_EMU_RECORD', 'c.jsonl']]) {
      assert.throws(() => loadConfig({ ...prod, [env]: value }), (e: Error) => e instanceof ConfigError && e.message.includes(env) && e.message.includes('emulator mode only'));
    }
    assert.throws(() => loadConfig({ GPUPLANE_EMU_CONTAINERS: 'podman' }), /GPUPLANE_EMU_CONTAINERS \(--emu-containers\): must be one of off, docker/);
    assert.equal(loadConfig({}).emuContainers, 'off');
  });

  test('production mode without GPUPLANE_SECRET_KEY is refused', () => {
    assert.throws(
      () => loadConfig({ GPUPLANE_MODE: 'production' }),
      (e: Error) => e instanceof ConfigError && e.message.includes('GPUPLANE_SECRET_KEY') && e.message.includes('production'),
    );
  });
});

describe('config: the README', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

  test('documents every variable and its flag', () => {
    for (const s of Object.values(SETTINGS)) {
      assert.ok(readme.includes(`| \`${s.env}\` | \`--${s.flag}\` |`), `README table row for ${s.env}`);
    }
  });

  test('the quick start is exactly the two commands', () => {
    const quick = readme.split('## Quick start')[1].split('\n## ')[0];
    const commands = [...quick.matchAll(/```sh\n([^`]*)```/g)].map((m) => m[1].trim());
    assert.deepEqual(commands, ['npm ci && npm start', 'npm ci && npm test']);
  });
});

describe('config: the real command', () => {
  test('gpuplane serve with a bad port exits 2 with one clear line and never listens', () => {
    const r = spawnSync(process.execPath, ['bin/gpuplane.mjs', 'serve', '--port', 'http'], {
      encoding: 'utf8',
      env: { ...process.env, GPUPLANE_DATABASE_URL: 'sqlite::memory:' },
      timeout: 30_000,
    });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /configuration error: GPUPLANE_PORT \(--port\): must be an integer/);
    assert.doesNotMatch(r.stdout, /listening/);
  });

  test('gpuplane serve --help lists every flag and its variable', () => {
    const r = spawnSync(process.execPath, ['bin/gpuplane.mjs', 'serve', '--help'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0);
    for (const s of Object.values(SETTINGS)) {
      assert.ok(r.stdout.includes(`--${s.flag}`), `--${s.flag} listed`);
      assert.ok(r.stdout.includes(s.env), `${s.env} listed`);
    }
  });
});

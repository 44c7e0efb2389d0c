// Message providers: e-mail over SMTP (a real SMTP server on loopback), SMS through the HTTP provider (a loopback
// HTTP server standing in for it), their failures as the spec's codes, and production mode end to end.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { productionMessenger } from '../src/messages/messages-service.js';
import { createTestApp, DIALECTS, type TestApp } from './helpers/harness.js';
import { ApiError } from '../src/platform/errors.js';

interface Mail { from: string; to: string[]; data: string; user?: string }

async function startSmtp(): Promise<{ port: number; mails: Mail[]; close(): Promise<void> }> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onAuth(auth, _session, cb) {
      cb(null, { user: auth.username });
    },
    onData(stream, session, cb) {
      let data = '';
      stream.on('data', (c: Buffer) => (data += c.toString('utf8')));
      stream.on('end', () => {
        mails.push({ from: String(session.envelope.mailFrom && (session.envelope.mailFrom as any).address), to: session.envelope.rcptTo.map((r) => r.address), data, user: session.user as string | undefined });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

interface SmsCall { method: string; url: string; auth: string; type: string; form: URLSearchParams }

async function startSmsProvider(status: () => number): Promise<{ url: string; calls: SmsCall[]; server: Server }> {
  const calls: SmsCall[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      calls.push({ method: req.method!, url: req.url!, auth: req.headers.authorization ?? '', type: req.headers['content-type'] ?? '', form: new URLSearchParams(body) });
      res.writeHead(status(), { 'content-type': 'application/json' });
      res.end('{"sid":"SM123","internal":"do not echo"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/2010-04-01`, calls, server };
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof ApiError && err.code === code);
}

describe('messages: SMTP', () => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  before(async () => (smtp = await startSmtp()));
  after(async () => smtp.close());

  test('an e-mail reaches the SMTP server with From, To, subject and text', async () => {
    const m = productionMessenger({ smtp: { url: `smtp://mailer:pw@127.0.0.1:${smtp.port}`, from: 'gpuplane <no-reply@gpuplane.test>' } });
    await m.sendEmail({ to: 'ada@example.com', subject: 'Your code', text: 'code 123456', code: '123456' });
    const mail = smtp.mails.at(-1)!;
    assert.equal(mail.from, 'no-reply@gpuplane.test');
    assert.deepEqual(mail.to, ['ada@example.com']);
    assert.equal(mail.user, 'mailer');
    assert.match(mail.data, /Subject: Your code/);
    assert.match(mail.data, /code 123456/);
  });

  test('an unreachable SMTP server is service_unavailable', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const m = productionMessenger({ smtp: { url: `smtp://127.0.0.1:${port}`, from: 'x@y.z', timeoutS: 2 } });
    await rejectsWith(m.sendEmail({ to: 'a@b.c', subject: 's', text: 't', code: null }), 'service_unavailable');
    await rejectsWith(productionMessenger({}).sendEmail({ to: 'a@b.c', subject: 's', text: 't', code: null }), 'service_unavailable');
  });
});

describe('messages: HTTP SMS provider', () => {
  let status = 201;
  let provider: Awaited<ReturnType<typeof startSmsProvider>>;
  before(async () => (provider = await startSmsProvider(() => status)));
  after(async () => new Promise<void>((r) => provider.server.close(() => r())));

  test('the documented request: POST /Accounts/{account}/Messages.json, Basic auth, form To/From/Body', async () => {
    status = 201;
    const m = productionMessenger({ sms: { baseUrl: provider.url, account: 'AC42', token: 'tok' } });
    await m.sendSms({ to: '+442071234567', text: 'Your code is 654321', code: '654321' });
    const call = provider.calls.at(-1)!;
    assert.equal(call.method, 'POST');
    assert.equal(call.url, '/2010-04-01/Accounts/AC42/Messages.json');
    assert.equal(call.auth, `Basic ${Buffer.from('AC42:tok').toString('base64')}`);
    assert.equal(call.type, 'application/x-www-form-urlencoded');
    assert.equal(call.form.get('To'), '+442071234567');
    assert.equal(call.form.get('Body'), 'Your code is 654321');
    assert.equal(call.form.get('From'), 'gpuplane');
  });

  test('429 is twilio_rate_limited; other failures and no provider are twilio_error', async () => {
    const m = productionMessenger({ sms: { baseUrl: provider.url, account: 'AC42', token: 'tok' } });
    status = 429;
    await rejectsWith(m.sendSms({ to: '+442071234567', text: 't', code: null }), 'twilio_rate_limited');
    status = 500;
    await rejectsWith(m.sendSms({ to: '+442071234567', text: 't', code: null }), 'twilio_error');
    status = 400;
    await rejectsWith(m.sendSms({ to: '+442071234567', text: 't', code: null }), 'twilio_error');
    const down = productionMessenger({ sms: { baseUrl: 'http://127.0.0.1:1', account: 'a', token: 't', timeoutS: 2 } });
    await rejectsWith(down.sendSms({ to: '+442071234567', text: 't', code: null }), 'twilio_error');
    await rejectsWith(productionMessenger({}).sendSms({ to: '+442071234567', text: 't', code: null }), 'twilio_error');
  });
});

for (const dialect of DIALECTS) {
  describe(`messages: production mode end to end [${dialect}]`, () => {
    let smtp: Awaited<ReturnType<typeof startSmtp>>;
    let app: TestApp;
    before(async () => {
      smtp = await startSmtp();
      app = await createTestApp(dialect, { config: { GPUPLANE_MODE: 'production', GPUPLANE_SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, GPUPLANE_SMTP_FROM: 'ops@gpuplane.test' } });
    });
    after(async () => {
      await app.close();
      await smtp.close();
    });

    test('sign-up sends the verification code over SMTP; the code verifies; nothing lands in the outbox', async () => {
      const res = await app.request('POST', '/api/v0/users/', { key: null, body: { email: 'prod@example.com', password: 'long enough pw' } });
      assert.equal(res.status, 200, res.raw);
      const mail = smtp.mails.find((m) => m.to.includes('prod@example.com'));
      assert.ok(mail, 'no e-mail received');
      const code = /code is (\d{6})/.exec(mail!.data.replace(/=\r?\n/g, ''))?.[1];
      assert.ok(code, mail!.data);
      const ok = await app.request('POST', '/api/v0/users/verify-email/', { key: null, body: { email: 'prod@example.com', code } });
      assert.equal(ok.status, 200, ok.raw);
      const outbox = await app.store.db.selectFrom('outbox').selectAll().execute();
      assert.equal(outbox.length, 0);
      assert.equal((await app.request('GET', '/_emu/outbox')).status, 404);
    });
  });
}

// SSH keys of an account (contract §3 routes; spec user object `ssh_key`: the registered public key), through HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, offerFor, rentOk } from './instances-fixtures.js';

/** An OpenSSH public key line: the wire blob is length-prefixed type name then key bytes (RFC 4253 §6.6). */
function pubKey(type: string, seed: string, comment = 'me@laptop'): string {
  const str = (b: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  const material = createHash('sha256').update(seed).digest();
  const blob = Buffer.concat([str(Buffer.from(type)), str(material)]);
  return `${type} ${blob.toString('base64')}${comment ? ` ${comment}` : ''}`;
}

forEachDialect('ssh keys', (app) => {
  const current = async (key: string) => (await app().request('GET', '/api/v0/users/current', { key })).body;

  test('register, list, update, delete; the user object ssh_key follows the most recent key', async () => {
    const { api_key: k, user } = await app().createUser();
    assert.equal((await current(k)).ssh_key, null);
    const first = pubKey('ssh-ed25519', 'one');
    const r1 = await app().request('POST', '/api/v0/ssh/', { key: k, body: { ssh_key: `  ${first}\n` } });
    assert.equal(r1.status, 200, r1.raw);
    assert.equal(r1.body.success, true);
    assert.equal(r1.body.key.ssh_key, first, 'stored trimmed');
    assert.equal(r1.body.key.user_id, user.id);
    assert.equal((await current(k)).ssh_key, first);

    await app().advance(1);
    const second = pubKey('ssh-rsa', 'two', '');
    const r2 = await app().request('POST', '/api/v0/ssh/', { key: k, body: { ssh_key: second } });
    assert.equal(r2.status, 200, r2.raw);
    assert.equal((await current(k)).ssh_key, second);

    const list = await app().request('GET', '/api/v0/ssh/', { key: k });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((x: any) => [x.id, x.ssh_key, x.key]), [[r1.body.key.id, first, first], [r2.body.key.id, second, second]]);

    const replaced = pubKey('ecdsa-sha2-nistp256', 'three');
    const u = await app().request('PUT', `/api/v0/ssh/${r2.body.key.id}/`, { key: k, body: { id: r2.body.key.id, ssh_key: replaced } });
    assert.equal(u.status, 200, u.raw);
    assert.equal(u.body.key.ssh_key, replaced);
    assert.equal((await current(k)).ssh_key, replaced);

    const d = await app().request('DELETE', `/api/v0/ssh/${r2.body.key.id}/`, { key: k });
    assert.equal(d.status, 200);
    assert.equal(d.body.success, true);
    assert.equal((await current(k)).ssh_key, first, 'back to the remaining key');
    const d1 = await app().request('DELETE', `/api/v0/ssh/${r1.body.key.id}`, { key: k });
    assert.equal(d1.status, 200);
    assert.equal((await current(k)).ssh_key, null);
    assert.deepEqual((await app().request('GET', '/api/v0/ssh/', { key: k })).body, []);
  });

  test('implausible keys are 400 and nothing is stored', async () => {
    const { api_key: k } = await app().createUser();
    const good = pubKey('ssh-ed25519', 'x');
    const [, body] = good.split(' ');
    for (const bad of [
      '',
      'hello',
      `ssh-foo ${body}`,
      'ssh-ed25519 not*base64',
      `ssh-rsa ${body}`, // the body says ed25519
      `ssh-ed25519 ${body.slice(0, 12)}`,
      `${good}\nssh-ed25519 ${body}`,
      '-----BEGIN OPENSSH PRIVATE KEY-----',
    ]) {
      const res = await app().request('POST', '/api/v0/ssh/', { key: k, body: { ssh_key: bad } });
      assert.equal(res.status, 400, `${JSON.stringify(bad)} → ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, /ssh_key/);
    }
    assert.equal((await app().request('POST', '/api/v0/ssh/', { key: k, body: {} })).status, 400);
    assert.equal((await app().request('POST', '/api/v0/ssh/', { key: k })).status, 400);
    assert.deepEqual((await app().request('GET', '/api/v0/ssh/', { key: k })).body, []);
    assert.equal((await current(k)).ssh_key, null);
  });

  test('the same key twice is 409; the same key with another comment too', async () => {
    const { api_key: k } = await app().createUser();
    const line = pubKey('ssh-ed25519', 'dup', 'a@b');
    assert.equal((await app().request('POST', '/api/v0/ssh/', { key: k, body: { ssh_key: line } })).status, 200);
    const again = await app().request('POST', '/api/v0/ssh/', { key: k, body: { ssh_key: pubKey('ssh-ed25519', 'dup', 'c@d') } });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'conflict');
    // Another account may register the same public key.
    const { api_key: other } = await app().createUser();
    assert.equal((await app().request('POST', '/api/v0/ssh/', { key: other, body: { ssh_key: line } })).status, 200);
  });

  test("someone else's key is 404 for update and delete, and absent from the list", async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const r = await app().request('POST', '/api/v0/ssh/', { key: a.api_key, body: { ssh_key: pubKey('ssh-ed25519', 'a-key') } });
    const id = r.body.key.id;
    const put = await app().request('PUT', `/api/v0/ssh/${id}/`, { key: b.api_key, body: { ssh_key: pubKey('ssh-ed25519', 'b-key') } });
    assert.equal(put.status, 404);
    assert.equal(put.body.error, 'not_found');
    assert.equal((await app().request('DELETE', `/api/v0/ssh/${id}/`, { key: b.api_key })).status, 404);
    assert.deepEqual((await app().request('GET', '/api/v0/ssh/', { key: b.api_key })).body, []);
    assert.equal((await current(a.api_key)).ssh_key, pubKey('ssh-ed25519', 'a-key'));
    assert.equal((await current(b.api_key)).ssh_key, null);
  });

  test('bad ids are 400, unknown ids 404', async () => {
    const { api_key: k } = await app().createUser();
    const body = { ssh_key: pubKey('ssh-ed25519', 'ids') };
    assert.equal((await app().request('PUT', '/api/v0/ssh/abc/', { key: k, body })).status, 400);
    assert.equal((await app().request('DELETE', '/api/v0/ssh/99999999999/', { key: k })).status, 400);
    assert.equal((await app().request('DELETE', '/api/v0/ssh/0/', { key: k })).status, 400);
    assert.equal((await app().request('DELETE', '/api/v0/ssh/424242/', { key: k })).status, 404);
    assert.equal((await app().request('PUT', '/api/v0/ssh/424242/', { key: k, body })).status, 404);
  });

  test('no key is 401; a read-only key can list but not change', async () => {
    assert.equal((await app().request('GET', '/api/v0/ssh/', { key: null })).status, 401);
    const made = await app().request('POST', '/api/v0/auth/apikeys/', { body: { permissions: { api: { user_read: {} } } } });
    const ro = made.body.key;
    assert.equal((await app().request('GET', '/api/v0/ssh/', { key: ro })).status, 200);
    const res = await app().request('POST', '/api/v0/ssh/', { key: ro, body: { ssh_key: pubKey('ssh-ed25519', 'ro') } });
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'permission_denied');
  });

  test('listForUser, get and publicKeysOf serve the instances feature', async () => {
    const a = await app().createUser();
    const b = await app().createUser();
    const line = pubKey('ssh-ed25519', 'svc');
    const id = (await app().request('POST', '/api/v0/ssh/', { key: a.api_key, body: { ssh_key: line } })).body.key.id;
    const svc = app().services.sshKeys;
    assert.deepEqual((await svc.listForUser(a.user.id)).map((k) => k.public_key), [line]);
    assert.deepEqual(await svc.publicKeysOf(a.user.id), [line]);
    assert.equal((await svc.get(a.user.id, id)).public_key, line);
    await assert.rejects(svc.get(b.user.id, id), (e: any) => e.code === 'not_found');
  });

  test('a key attached to an instance follows the same rules, and is stored in the same form', async () => {
    const { api_key: k } = await app().createUser();
    const { id } = await rentOk(app(), offerFor(await addMachine(app()), 1), {}, k);
    const attach = (ssh_key: string) => app().request('POST', `/api/v0/instances/${id}/ssh/`, { key: k, body: { ssh_key } });
    const good = pubKey('ssh-ed25519', 'inst');
    const [type, body] = good.split(' ');
    for (const bad of [`ssh-rsa ${body}`, `${type} ${body.slice(0, 12)}`, `ssh-ed448 ${pubKey('ssh-ed448', 'x').split(' ')[1]}`, '-----BEGIN OPENSSH PRIVATE KEY-----']) {
      const res = await attach(bad);
      assert.equal(res.status, 400, `${JSON.stringify(bad)} → ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, /ssh_key/);
    }
    const first = await attach(`  ${type}\t${body}  me@laptop\n`);
    assert.equal(first.status, 200, first.raw);
    const again = await attach(good);
    assert.equal(again.body.key_id, first.body.key_id, 'the same key, normalized, is attached once');
    const list = await app().request('GET', `/api/v0/instances/${id}/ssh/`, { key: k });
    assert.deepEqual(list.body.ssh_keys.map((x: any) => x.ssh_key), [good]);
    // The account accepts exactly the key the instance accepted.
    assert.equal((await app().request('POST', '/api/v0/ssh/', { key: k, body: { ssh_key: good } })).body.key.ssh_key, good);
  });
});

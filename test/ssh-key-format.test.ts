// The one SSH public-key parser (src/ssh-keys/ssh-keys-contract.ts), used by the account's keys and by instance attach.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parseSshPublicKey, SSH_KEY_MAX_CHARS, SSH_KEY_TYPES } from '../src/ssh-keys/ssh-keys-contract.js';

/** A wire blob: length-prefixed type name, then key bytes (RFC 4253 §6.6), base64. */
function body(type: string, seed = 'k'): string {
  const str = (b: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  return Buffer.concat([str(Buffer.from(type)), str(createHash('sha256').update(seed).digest())]).toString('base64');
}

const fails = (input: string, msg: RegExp) =>
  assert.throws(() => parseSshPublicKey(input), (e: any) => e.code === 'bad_request' && msg.test(e.message), JSON.stringify(input.slice(0, 60)));

test('every OpenSSH type is accepted; the line is stored as type, body and comment with single spaces', () => {
  for (const type of SSH_KEY_TYPES) {
    const b = body(type);
    assert.deepEqual(parseSshPublicKey(`${type} ${b} me@laptop`), { type, body: b, comment: 'me@laptop', normalized: `${type} ${b} me@laptop` });
  }
  const b = body('ssh-ed25519');
  assert.equal(parseSshPublicKey(`  ssh-ed25519\t${b}   two words \n`).normalized, `ssh-ed25519 ${b} two words`);
  assert.equal(parseSshPublicKey(`ssh-ed25519 ${b}`).normalized, `ssh-ed25519 ${b}`);
});

test('refused: empty, too long, several lines, a private key, an unknown or non-OpenSSH type', () => {
  const b = body('ssh-ed25519');
  fails('   ', /required/);
  fails(`ssh-ed25519 ${b} ${'x'.repeat(SSH_KEY_MAX_CHARS)}`, /longer than 16384/);
  fails(`ssh-ed25519 ${b}\nssh-ed25519 ${b}`, /single line/);
  fails('-----BEGIN OPENSSH PRIVATE KEY-----', /private key/);
  fails(`ssh-ed448 ${body('ssh-ed448')}`, /must be an OpenSSH public key/);
  fails(`ssh-foo ${body('ssh-foo')}`, /must be an OpenSSH public key/);
  fails(b, /must be an OpenSSH public key/);
});

test('refused: a body that is not base64, is truncated, or names another type', () => {
  const b = body('ssh-ed25519');
  fails('ssh-ed25519', /not valid base64/);
  fails('ssh-ed25519 not*base64', /not valid base64/);
  fails(`ssh-ed25519 ${b.slice(0, -1)}`, /not valid base64/);
  fails(`ssh-ed25519 ${b}====`, /not valid base64/);
  fails(`ssh-ed25519 ${b.slice(0, 12)}`, /not a ssh-ed25519 public key/);
  fails(`ssh-rsa ${b}`, /not a ssh-rsa public key/);
  fails(`ssh-ed25519 ${Buffer.from('\0\0\0\x0bssh-ed25519').toString('base64')}`, /not a ssh-ed25519 public key/);
});

/**
 * One SSH host key per instance for the agent's own SSH server: ed25519, made the first time the instance is reached
 * and kept in the agent's state directory (`ssh-host-keys/<instance id>.key`, mode 0600, its folder 0700), so a
 * renter's `known_hosts` holds across agent restarts, container restarts and recreations. Written to a temporary
 * file and linked into place, so a crash never leaves half a key, and two first connections at once end with one. Private keys never leave this file and are never logged.
 */
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ssh2 } from './ssh2-lib.js';

export const HOST_KEYS_DIR = 'ssh-host-keys';

export function hostKeyPath(stateDir: string, instanceId: number): string {
  return join(stateDir, HOST_KEYS_DIR, `${instanceId}.key`);
}

/** Tries at making a key that parses (see newHostKey). */
const KEY_TRIES = 20;

/**
 * A new ed25519 private key that ssh2 itself can read back. ssh2's generateKeyPairSync writes about 1 key in 250 that
 * its own parseKey refuses ("Malformed OpenSSH private key": 12 of 3,000 measured), and a server given such a key
 * drops every connection before the key exchange (the clean-clone CI's ssh-direct-busybox test failed so, once).
 */
function newHostKey(instanceId: number): string {
  for (let i = 0; i < KEY_TRIES; i++) {
    const key = ssh2().utils.generateKeyPairSync('ed25519', { comment: `gpuplane instance ${instanceId}` }).private;
    if (!(ssh2().utils.parseKey(key) instanceof Error)) return key;
  }
  throw new Error(`no readable ed25519 host key in ${KEY_TRIES} tries`);
}

/** The instance's host private key (OpenSSH format), made and stored when it has none or has one that cannot be read. */
export function instanceHostKey(stateDir: string, instanceId: number): string {
  const path = hostKeyPath(stateDir, instanceId);
  try {
    const stored = readFileSync(path, 'utf8');
    if (!(ssh2().utils.parseKey(stored) instanceof Error)) return stored;
    // A key an earlier agent stored that ssh2 cannot read (newHostKey): no connection ever got in with it.
    rmSync(path, { force: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const dir = join(stateDir, HOST_KEYS_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const key = newHostKey(instanceId);
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, key, { mode: 0o600, flag: 'wx' });
  try {
    // A hard link appears whole or not at all, and never replaces a key stored meanwhile by another first
    // connection: that one stays, ours goes.
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readFileSync(path, 'utf8');
  } finally {
    rmSync(tmp, { force: true });
  }
  return key;
}

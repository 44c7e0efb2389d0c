/**
 * The gateway's own SSH host key, which only its refusals show (gateway-refusal.ts): one for the whole deployment,
 * made by the first process that needs it and kept in the platform's `kv` table, sealed with the secret key, so every
 * process on one database shows the same key and a restart does not change it (a renter's known_hosts stays valid).
 */
import ssh2 from 'ssh2';
import type { SecretBox } from '../platform/crypto.js';
import type { Db } from '../platform/db/connect.js';
import { kvState } from '../platform/db/kv.js';

const KV_KEY = 'gateway.host_key';

/**
 * A new ed25519 key that ssh2 can read back: its generateKeyPairSync writes about 1 key in 250 that its own parseKey
 * refuses (as src/agent/ssh/host-keys.ts found), and a server given one drops every connection.
 */
function readableKey(): string {
  for (let i = 0; i < 20; i++) {
    const key = ssh2.utils.generateKeyPairSync('ed25519').private;
    if (!(ssh2.utils.parseKey(key) instanceof Error)) return key;
  }
  throw new Error('no readable ed25519 host key in 20 tries');
}

/** The host key (OpenSSH private key text): the stored one, or a new ed25519 key stored first if none is. */
export async function gatewayHostKey(db: Db, secretBox: SecretBox): Promise<string> {
  const kv = kvState(db);
  const stored = await kv.get(db, KV_KEY);
  if (stored !== undefined) {
    const key = secretBox.open(stored);
    if (key === null) throw new Error('the SSH gateway\'s host key in the database does not open with GPUPLANE_SECRET_KEY (was the key changed?)');
    return key;
  }
  const made = readableKey();
  // Another process may store its own first: the claim keeps one, and every process reads that one.
  if (await kv.claim(db, KV_KEY, secretBox.seal(made))) return made;
  return gatewayHostKey(db, secretBox);
}

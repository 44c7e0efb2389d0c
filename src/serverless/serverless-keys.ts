/**
 * The serverless keys (docs/spec/client-compat-more.md §e):
 * - each endpoint's own API key, the `api_key` of the endpoint object, which `POST /route/` authenticates: kept as
 *   its SHA-256 (the lookup) and sealed with the secret key (to show it to the owner), never in clear;
 * - the router's RSA signing key pair: `POST /route/` signs the worker address it hands out, and workers (the
 *   pyworker) check that signature with the public key served at `GET /pubkey/`. The private key is sealed with the
 *   secret key in one `kv` row, created once by whichever process needs it first.
 */
import { createPrivateKey, createSign, generateKeyPair, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { sha256Hex, type SecretBox } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { secretToken, type Random } from '../platform/random.js';

/** Prefix of endpoint keys: told apart from account keys (`gpk_`) at a glance. */
export const ENDPOINT_KEY_PREFIX = 'gpe_';
/** The `kv` row of the signing key pair: `{"public_pem", "private_sealed"}`. */
export const SIGNING_KEY_KV = 'serverless_signing_key';
/** RSA modulus of the signing key (the pyworker verifies PKCS#1 v1.5 with SHA-256 over any RSA key). */
const SIGNING_KEY_BITS = 2048;

const generateRsa = promisify(generateKeyPair);

export interface EndpointKey {
  key: string;
  hash: string;
  sealed: string;
}

/**
 * The text the pyworker verifies: Python's `json.dumps({"url": url}, indent=4, sort_keys=True)` (vastai/serverless/
 * server/lib/backend.py `__check_signature`). For one key and an ASCII value, JSON.stringify with an indent of 4 is
 * the same text; Python would escape non-ASCII characters, so a URL is checked to be ASCII before signing.
 */
export function signedText(url: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/^[\x20-\x7e]*$/.test(url)) throw new Error('worker URLs are printable ASCII');
  return JSON.stringify({ url }, null, 4);
}

export function serverlessKeysFactory({ db, random, secretBox }: { db: Db; random: Random; secretBox: SecretBox }) {
  /** The parsed private key, reused while the sealed row is unchanged (an emulator reset makes a new pair). */
  let cached: { sealed: string; key: KeyObject } | undefined;

  async function pair(tx: Tx = db): Promise<{ public_pem: string; private_sealed: string }> {
    const read = async () => tx.selectFrom('kv').select('value').where('key', '=', SIGNING_KEY_KV).executeTakeFirst();
    let row = await read();
    if (!row) {
      const { publicKey, privateKey } = await generateRsa('rsa', {
        modulusLength: SIGNING_KEY_BITS,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      });
      const value = JSON.stringify({ public_pem: publicKey, private_sealed: secretBox.seal(privateKey) });
      // Two processes generating at once: the primary key lets one insert win, and both use the winner's pair.
      await tx.insertInto('kv').values({ key: SIGNING_KEY_KV, value }).onConflict((oc) => oc.column('key').doNothing()).execute();
      row = await read();
    }
    return JSON.parse(row!.value) as { public_pem: string; private_sealed: string };
  }

  return {
    /** A new endpoint key: the key itself (shown to the owner), its digest (looked up) and its sealed copy (kept). */
    newEndpointKey(): EndpointKey {
      const key = secretToken(random, ENDPOINT_KEY_PREFIX);
      return { key, hash: sha256Hex(key), sealed: secretBox.seal(key) };
    },

    /** The key of a sealed copy, or null when it was sealed with another secret key. */
    openEndpointKey(sealed: string): string | null {
      return secretBox.open(sealed);
    },

    hashOf: (key: string) => sha256Hex(key),

    /** The public key, as PEM text (`GET /pubkey/`). */
    async publicPem(): Promise<string> {
      return (await pair()).public_pem;
    },

    /** Base64 of the RSA PKCS#1 v1.5 SHA-256 signature over `signedText(url)`. */
    async sign(url: string, tx?: Tx): Promise<string> {
      const { private_sealed } = await pair(tx);
      if (cached?.sealed !== private_sealed) {
        const pem = secretBox.open(private_sealed);
        if (pem === null) throw new Error('the serverless signing key was sealed with another secret key (GPUPLANE_SECRET_KEY changed)');
        cached = { sealed: private_sealed, key: createPrivateKey(pem) };
      }
      return createSign('sha256').update(signedText(url)).sign(cached.key).toString('base64');
    },
  };
}

export type ServerlessKeys = ReturnType<typeof serverlessKeysFactory>;

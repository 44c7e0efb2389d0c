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
import { kvState } from '../platform/db/kv.js';
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

/** What a route reply's `auth_signature` covers: the reply's routing fields and until when it holds. */
export interface AuthFields {
  cost: number;
  endpoint: string;
  reqnum: number;
  request_idx: number;
  url: string;
  valid_until: number;
}

/**
 * The text of `auth_signature`: Python's `json.dumps(fields, indent=4, sort_keys=True)` of the reply's own fields, so
 * a worker checks it as the pyworker checks `signature`, from the `auth_data` it is sent. Python escapes every
 * character above ASCII (`ensure_ascii`), one `\uXXXX` per UTF-16 unit, as here.
 */
export function authSignedText(f: AuthFields): string {
  const sorted = Object.fromEntries(Object.entries(signedFields(f)).sort(([a], [b]) => (a < b ? -1 : 1)));
  return JSON.stringify(sorted, null, 4).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The fields alone (a reply carries more), after `signedText`'s check of the URL. */
function signedFields(f: AuthFields): AuthFields {
  signedText(f.url);
  return { cost: f.cost, endpoint: f.endpoint, reqnum: f.reqnum, request_idx: f.request_idx, url: f.url, valid_until: f.valid_until };
}

export function serverlessKeysFactory({ db, random, secretBox }: { db: Db; random: Random; secretBox: SecretBox }) {
  const kv = kvState(db);
  /** The parsed private key, reused while the sealed row is unchanged (an emulator reset makes a new pair). */
  let cached: { sealed: string; key: KeyObject } | undefined;

  async function pair(tx: Tx = db): Promise<{ public_pem: string; private_sealed: string }> {
    let value = await kv.get(tx, SIGNING_KEY_KV);
    if (value === undefined) {
      const { publicKey, privateKey } = await generateRsa('rsa', {
        modulusLength: SIGNING_KEY_BITS,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      });
      // Two processes generating at once: the first claim wins, and both use the winner's pair.
      await kv.claim(tx, SIGNING_KEY_KV, JSON.stringify({ public_pem: publicKey, private_sealed: secretBox.seal(privateKey) }));
      value = await kv.get(tx, SIGNING_KEY_KV);
    }
    return JSON.parse(value!) as { public_pem: string; private_sealed: string };
  }

  async function signText(text: string, tx?: Tx): Promise<string> {
    const { private_sealed } = await pair(tx);
    if (cached?.sealed !== private_sealed) {
      const pem = secretBox.open(private_sealed);
      if (pem === null) throw new Error('the serverless signing key was sealed with another secret key (GPUPLANE_SECRET_KEY changed)');
      cached = { sealed: private_sealed, key: createPrivateKey(pem) };
    }
    return createSign('sha256').update(text).sign(cached.key).toString('base64');
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
    sign: (url: string, tx?: Tx): Promise<string> => signText(signedText(url), tx),

    /** The same signature over `authSignedText(fields)` (a route reply's `auth_signature`). */
    signAuth: (fields: AuthFields, tx?: Tx): Promise<string> => signText(authSignedText(fields), tx),
  };
}

export type ServerlessKeys = ReturnType<typeof serverlessKeysFactory>;

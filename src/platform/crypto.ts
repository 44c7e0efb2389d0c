import * as nodeCrypto from 'node:crypto';
import { createCipheriv, createDecipheriv, createHash, scrypt, timingSafeEqual } from 'node:crypto';
import type { Random } from './random.js';

/** Node's one-shot `crypto.hash` (20.12+), about three times cheaper than a Hash object; absent on older 20.x. */
const oneShotHash = (nodeCrypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** SHA-256 of a string's UTF-8 bytes, in hex. It runs on every authenticated request (the key lookup). */
export function sha256Hex(value: string): string {
  if (oneShotHash) return oneShotHash('sha256', value, 'hex');
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time comparison of two secrets, through fixed-length digests so lengths leak nothing either. */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}

/** Length of a SHA-256 digest in hex. */
const DIGEST_HEX_LENGTH = 64;
/** Scratch space for `digestEqual`: it is synchronous, so one pair serves every call without allocating. */
const digestA = Buffer.alloc(DIGEST_HEX_LENGTH);
const digestB = Buffer.alloc(DIGEST_HEX_LENGTH);

/**
 * Constant-time comparison of two SHA-256 hex digests. Digests have a fixed length, so they are compared as they
 * are, without hashing them again (this runs on every request); anything else goes through `safeEqual`.
 */
export function digestEqual(a: string, b: string): boolean {
  if (a.length !== DIGEST_HEX_LENGTH || b.length !== DIGEST_HEX_LENGTH) return safeEqual(a, b);
  // latin1: one byte per character, as Buffer.from(s, 'latin1') did, so both always fill the 64 bytes.
  digestA.write(a, 0, 'latin1');
  digestB.write(b, 0, 'latin1');
  return timingSafeEqual(digestA, digestB);
}

/** AES-256-GCM for secrets at rest. Output: `v1.<iv>.<tag>.<ciphertext>` in base64url. */
export class SecretBox {
  private readonly key: Buffer;
  constructor(
    secretKey: string,
    private readonly random: Random,
  ) {
    // Any configured string becomes a 256-bit key; the configured value itself is never stored.
    this.key = createHash('sha256').update(secretKey, 'utf8').digest();
  }

  seal(plain: string): string {
    const iv = this.random.bytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  /** Returns null when the value was sealed with another key or is corrupt. */
  open(sealed: string): string | null {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(parts[1], 'base64url'));
      decipher.setAuthTag(Buffer.from(parts[2], 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(parts[3], 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}

/** scrypt parameters for passwords: slow on purpose (about 50 ms, 16 MiB). */
const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 } as const;

/** A slow salted password hash: `scrypt$N$r$p$salt$hash`. */
export function hashPassword(password: string, random: Random): Promise<string> {
  const salt = random.bytes(16);
  return new Promise((resolve, reject) =>
    scrypt(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(`scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64url')}$${key.toString('base64url')}`),
    ),
  );
}

export function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return Promise.resolve(false);
  const expected = Buffer.from(hash, 'base64url');
  return new Promise((resolve) =>
    scrypt(
      password,
      Buffer.from(salt, 'base64url'),
      expected.length,
      { N: Number(n), r: Number(r), p: Number(p), maxmem: 64 * 1024 * 1024 },
      (err, key) => resolve(!err && key.length === expected.length && timingSafeEqual(key, expected)),
    ),
  );
}

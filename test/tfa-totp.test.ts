// TOTP per RFC 6238: the RFC's Appendix B test vectors, ±1 step of drift, one use per code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringToBytes } from 'otplib';
import { isTotpSecret, newTotpSecret, totpCode, verifyTotp } from '../src/tfa/totp.js';
import { cryptoRandom } from '../src/platform/random.js';

// RFC 6238 Appendix B: seeds are ASCII, 20/32/64 bytes for SHA-1/256/512; 8-digit codes.
const SEEDS = {
  sha1: stringToBytes('12345678901234567890'),
  sha256: stringToBytes('12345678901234567890123456789012'),
  sha512: stringToBytes('1234567890123456789012345678901234567890123456789012345678901234'),
};
const VECTORS: [number, string, string, string][] = [
  [59, '94287082', '46119246', '90693936'],
  [1111111109, '07081804', '68084774', '25091201'],
  [1111111111, '14050471', '67062674', '99943326'],
  [1234567890, '89005924', '91819424', '93441116'],
  [2000000000, '69279037', '90698825', '38618901'],
  [20000000000, '65353130', '77737706', '47863826'],
];

test('RFC 6238 Appendix B vectors (SHA-1, SHA-256, SHA-512)', () => {
  for (const [t, sha1, sha256, sha512] of VECTORS) {
    assert.equal(totpCode(SEEDS.sha1, t, { digits: 8, algorithm: 'sha1' }), sha1, `sha1 @${t}`);
    assert.equal(totpCode(SEEDS.sha256, t, { digits: 8, algorithm: 'sha256' }), sha256, `sha256 @${t}`);
    assert.equal(totpCode(SEEDS.sha512, t, { digits: 8, algorithm: 'sha512' }), sha512, `sha512 @${t}`);
  }
});

test('drift: the previous and next step are accepted, two steps away is not', () => {
  const secret = newTotpSecret(cryptoRandom);
  const t = 1_800_000_015;
  const step = Math.floor(t / 30);
  assert.equal(verifyTotp(secret, totpCode(secret, t), t, null), step);
  assert.equal(verifyTotp(secret, totpCode(secret, t - 30), t, null), step - 1);
  assert.equal(verifyTotp(secret, totpCode(secret, t + 30), t, null), step + 1);
  assert.equal(verifyTotp(secret, totpCode(secret, t - 60), t, null), null);
  assert.equal(verifyTotp(secret, totpCode(secret, t + 60), t, null), null);
});

test('a step at or before the last accepted one is refused (replay)', () => {
  const secret = newTotpSecret(cryptoRandom);
  const t = 1_800_000_015;
  const step = Math.floor(t / 30);
  assert.equal(verifyTotp(secret, totpCode(secret, t), t, step), null);
  assert.equal(verifyTotp(secret, totpCode(secret, t - 30), t, step - 1), null);
  assert.equal(verifyTotp(secret, totpCode(secret, t + 30), t, step), step + 1);
});

test('malformed codes and secrets', () => {
  const secret = newTotpSecret(cryptoRandom);
  assert.equal(verifyTotp(secret, 'abcdef', 1_800_000_000, null), null);
  assert.equal(verifyTotp(secret, '12345', 1_800_000_000, null), null);
  assert.equal(isTotpSecret(secret), true);
  assert.equal(isTotpSecret('not base32!'), false);
  assert.equal(isTotpSecret('AAAA'), false);
});

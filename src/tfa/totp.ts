import { generateSync, generateURI, ScureBase32Plugin, verifySync } from 'otplib';
import type { Random } from '../platform/random.js';
import { CODE_DIGITS, TOTP_DRIFT_STEPS, TOTP_ISSUER, TOTP_PERIOD_S, TOTP_SECRET_BYTES } from './tfa-constants.js';

const base32 = new ScureBase32Plugin();

/** A new TOTP secret, base32, from the injected random source (not the library's). */
export function newTotpSecret(random: Random): string {
  return base32.encode(new Uint8Array(random.bytes(TOTP_SECRET_BYTES)));
}

/** True when `secret` is base32 of a usable length (what totp-setup hands out, or an authenticator accepts). */
export function isTotpSecret(secret: string): boolean {
  if (!/^[A-Z2-7]+=*$/.test(secret)) return false;
  try {
    return base32.decode(secret).length >= 16;
  } catch {
    return false;
  }
}

export function provisioningUri(secret: string, accountLabel: string): string {
  return generateURI({ issuer: TOTP_ISSUER, label: accountLabel, secret, digits: CODE_DIGITS, period: TOTP_PERIOD_S });
}

/** The code for time `at` (tests and the RFC 6238 vectors). */
export function totpCode(secret: string | Uint8Array, at: number, opts: { digits?: 6 | 7 | 8; algorithm?: 'sha1' | 'sha256' | 'sha512' } = {}): string {
  return generateSync({ secret, epoch: Math.floor(at), period: TOTP_PERIOD_S, digits: opts.digits ?? CODE_DIGITS, algorithm: opts.algorithm ?? 'sha1' });
}

/**
 * Checks a code at time `at` with one step of drift either way (RFC 6238 §5.2), in constant time (otplib compares
 * so). Returns the time step it matched, or null. Steps at or before `afterStep` are refused: a code works once.
 */
export function verifyTotp(secret: string, code: string, at: number, afterStep: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  try {
    const r = verifySync({
      secret,
      token: code,
      epoch: Math.floor(at),
      period: TOTP_PERIOD_S,
      digits: CODE_DIGITS,
      epochTolerance: TOTP_DRIFT_STEPS * TOTP_PERIOD_S,
      ...(afterStep !== null ? { afterTimeStep: afterStep } : {}),
    });
    return r.valid && 'timeStep' in r ? r.timeStep : null;
  } catch {
    return null;
  }
}

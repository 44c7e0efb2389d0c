import { randomBytes, randomInt } from 'node:crypto';

/** Ids, secrets and codes. Injected so tests can make them predictable; nothing else calls crypto.random*. */
export interface Random {
  bytes(n: number): Buffer;
  /** Uniform integer in [min, max). */
  int(min: number, max: number): number;
}

export const cryptoRandom: Random = {
  bytes: (n) => randomBytes(n),
  int: (min, max) => randomInt(min, max),
};

/** A long random secret with a fixed prefix, e.g. `gpk_…` for API keys (256 bits, base64url). */
export function secretToken(random: Random, prefix: string): string {
  return `${prefix}${random.bytes(32).toString('base64url')}`;
}

/** Decimal digits code, e.g. 6-digit challenge codes. */
export function digitCode(random: Random, length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) s += String(random.int(0, 10));
  return s;
}

/**
 * A small deterministic generator (mulberry32) for the simulated fleet: the same seed gives the same machines.
 * Not for secrets.
 */
export class SeededRandom {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0 || 0x9e3779b9;
  }
  /** Uniform float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min));
  }
  range(min: number, max: number): number {
    return min + this.next() * (max - min);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

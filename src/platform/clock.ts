/** The one source of time. Unix seconds, fractions allowed. Nothing else in the code reads the time. */
export interface Clock {
  readonly kind: 'real' | 'virtual';
  now(): number;
}

export class RealClock implements Clock {
  readonly kind = 'real' as const;
  now(): number {
    return Date.now() / 1000;
  }
}

/** Time stands still and moves only when told to (`POST /_emu/clock/advance`). */
export class VirtualClock implements Clock {
  readonly kind = 'virtual' as const;
  constructor(private current: number) {}
  now(): number {
    return this.current;
  }
  /** Moves the clock to `t`; a clock never goes backwards. */
  set(t: number): void {
    if (t > this.current) this.current = t;
  }
  /** Puts the clock at `t`, backwards too: only loading a saved world does (issue 34, `PUT /_emu/state`). */
  restore(t: number): void {
    this.current = t;
  }
}

export function isVirtual(clock: Clock): clock is VirtualClock {
  return clock.kind === 'virtual';
}

/**
 * A duration named by a constant, as a message says it: 600 → "10 minutes", 86400 → "24 hours", 604800 → "7 days".
 * Messages build their wording from the constant, so the text cannot drift from what the code enforces.
 */
export function durationText(seconds: number): string {
  const [unit, size] = seconds % 86400 === 0 && seconds >= 2 * 86400 ? ['days', 86400]
    : seconds % 3600 === 0 && seconds >= 2 * 3600 ? ['hours', 3600]
    : seconds % 60 === 0 && seconds >= 2 * 60 ? ['minutes', 60]
    : ['seconds', 1];
  return `${seconds / (size as number)} ${unit}`;
}

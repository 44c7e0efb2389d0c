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
}

export function isVirtual(clock: Clock): clock is VirtualClock {
  return clock.kind === 'virtual';
}

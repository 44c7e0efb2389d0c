/** The Emulator page's logic without React (contract §2): a clock advance typed as a duration. */

const UNIT: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** `90`, `90s`, `15m`, `2h`, `1d`, `1w`, `1h30m` → seconds; null when it is not a positive duration. */
export function parseDuration(input: string): number | null {
  const s = input.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) > 0 ? Number(s) : null;
  const parts = [...s.matchAll(/(\d+(?:\.\d+)?)\s*([smhdw])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('').replace(/\s/g, '') !== s.replace(/\s/g, '')) return null;
  const total = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT[p[2]!]!, 0);
  return total > 0 ? total : null;
}

/** The faults the emulator takes (contract §2), with what each needs. */
export const FAULTS = [
  { fault: 'exited', target: 'instance', what: 'the container exits' },
  { fault: 'unknown', target: 'instance', what: 'the host stops reporting the instance' },
  { fault: 'offline', target: 'instance', what: 'the host disconnects' },
  { fault: 'stall', target: 'instance', what: 'the instance stays loading' },
  { fault: 'recover', target: 'instance', what: 'back to normal' },
  { fault: 'offline', target: 'machine', what: 'the machine goes offline' },
  { fault: 'recover', target: 'machine', what: 'the machine comes back' },
  { fault: 'sms_error', target: 'count', what: 'the next SMS sends fail (twilio_error)' },
  { fault: 'sms_rate_limited', target: 'count', what: 'the next SMS sends are rate limited' },
  { fault: 'store_unavailable', target: 'count', what: 'the add-method authorization check fails (service_unavailable)' },
] as const;

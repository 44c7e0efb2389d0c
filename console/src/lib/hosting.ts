/**
 * The Machines page's logic without React (issue 15: Hosts): a machine's state in words, its GPUs' occupancy, the
 * listing form's body (client-compat-more §a: `list machine` sends every key, null keeps a value) and the earnings
 * per day for the chart.
 */

/** What `gpu_occupancy` letters mean: one per GPU. */
const OCCUPANCY: Record<string, string> = { D: 'rented on demand', I: 'rented interruptible', x: 'idle' };

/** `"DIx"` → `["rented on demand", "rented interruptible", "idle"]`. */
export function occupancy(letters: string): string[] {
  return [...letters].map((l) => OCCUPANCY[l] ?? 'unknown');
}

/** Counts per state: `2 rented on demand, 1 idle`. */
export function occupancySummary(letters: string): string {
  const counts = new Map<string, number>();
  for (const o of occupancy(letters)) counts.set(o, (counts.get(o) ?? 0) + 1);
  return [...counts].map(([what, n]) => `${n} ${what}`).join(', ') || 'no GPUs';
}

export interface MachineState {
  online: boolean;
  listed: boolean;
  rentable: boolean;
  maintenance: unknown[];
}

/** The state words a badge shows (never colour alone), and its tone. */
export function machineState(m: MachineState): { word: string; tone: 'ok' | 'warn' | 'bad' | 'idle' } {
  if (!m.online) return { word: 'Offline', tone: 'bad' };
  if (m.maintenance.length > 0 && !m.rentable) return { word: 'Maintenance', tone: 'warn' };
  if (m.listed && m.rentable) return { word: 'Listed', tone: 'ok' };
  if (m.listed) return { word: 'Listed, not rentable', tone: 'warn' };
  return { word: 'Unlisted', tone: 'idle' };
}

export interface ListingForm {
  price_gpu: string;
  price_disk: string;
  price_inetu: string;
  price_inetd: string;
  price_min_bid: string;
  min_chunk: string;
  end_date: string;
}

/** Every key `list machine` sends; a blank field is null (keeps the machine's value). */
export interface ListingBody {
  machine: number;
  price_gpu: number | null;
  price_disk: number | null;
  price_inetu: number | null;
  price_inetd: number | null;
  price_min_bid: number | null;
  min_chunk: number | null;
  end_date: number | null;
  credit_discount_max: null;
  duration: null;
  vol_size: null;
  vol_price: null;
}

/**
 * The listing body from the form, or the field and words of the first mistake. Prices are dollars (≥ 0); `end_date`
 * is a `YYYY-MM-DD` date (the listing ends at its UTC midnight).
 */
export function listingBody(machine: number, f: ListingForm): ListingBody | { field: keyof ListingForm; error: string } {
  const price = (field: keyof ListingForm): number | null | { field: keyof ListingForm; error: string } => {
    const v = f[field].trim();
    if (v === '') return null;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) return { field, error: 'Enter a price in dollars, 0 or more.' };
    return n;
  };
  const out: Record<string, unknown> = { machine };
  for (const k of ['price_gpu', 'price_disk', 'price_inetu', 'price_inetd', 'price_min_bid'] as const) {
    const p = price(k);
    if (p !== null && typeof p === 'object') return p;
    out[k] = p;
  }
  const chunk = f.min_chunk.trim();
  if (chunk === '') out.min_chunk = null;
  else if (!/^\d+$/.test(chunk) || Number(chunk) < 1) return { field: 'min_chunk', error: 'Enter a whole number of GPUs, 1 or more.' };
  else out.min_chunk = Number(chunk);
  const end = f.end_date.trim();
  if (end === '') out.end_date = null;
  else {
    const ms = /^\d{4}-\d{2}-\d{2}$/.test(end) ? Date.parse(`${end}T00:00:00Z`) : Number.NaN;
    if (Number.isNaN(ms)) return { field: 'end_date', error: 'Enter a date (YYYY-MM-DD).' };
    out.end_date = ms / 1000;
  }
  return { ...(out as Omit<ListingBody, 'credit_discount_max' | 'duration' | 'vol_size' | 'vol_price'>), credit_discount_max: null, duration: null, vol_size: null, vol_price: null };
}

/** A maintenance window's start from a `YYYY-MM-DDTHH:MM` input read as UTC, in Unix seconds; NaN when invalid. */
export function utcInputToSeconds(value: string): number {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(value)) return Number.NaN;
  const ms = Date.parse(`${value}:00Z`);
  return Number.isNaN(ms) ? Number.NaN : ms / 1000;
}

/** Unix seconds as the value of a `datetime-local` input (UTC). */
export function secondsToUtcInput(sec: number): string {
  return new Date(sec * 1000).toISOString().slice(0, 16);
}

/**
 * Reading a GPU's health and load (issue 33): `nvidia-smi --query-gpu` for utilization, memory, temperature, power and
 * ECC errors, its error lines for a lost GPU or a failed NVML, and the kernel log's `NVRM: Xid` lines for the faults
 * the driver reports nowhere else. Pure functions over text, so captured outputs of real drivers are the tests
 * (test/fixtures/nvidia-smi/).
 */
import type { GpuSampleT } from '../protocol/agent-protocol-schemas.js';

/**
 * Fields of `nvidia-smi --query-gpu` (`nvidia-smi --help-query-gpu`), all known to drivers long before any this agent
 * supports (an unknown field makes nvidia-smi refuse the whole query). `pci.bus_id` ties a row to the kernel's Xid lines
 * and to the error line of a GPU that is lost (which has no row).
 */
export const TELEMETRY_FIELDS = [
  'index',
  'pci.bus_id',
  'utilization.gpu',
  'utilization.memory',
  'memory.used',
  'memory.total',
  'temperature.gpu',
  'power.draw',
  'ecc.errors.uncorrected.volatile.total',
] as const;

export function telemetryArgs(): string[] {
  return [`--query-gpu=${TELEMETRY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];
}

/**
 * Xids that make a GPU unfit to rent until the host acts (NVIDIA's Xid catalog, "Resolution bucket": reset the GPU,
 * reboot, or service). Others (13 graphics engine exception, 31 MMU fault, 43 stopped channel, 94 contained ECC) are
 * the renter's own program's faults or recovered by the driver, and leave the GPU rentable.
 */
export const CRITICAL_XIDS: ReadonlyMap<number, string> = new Map([
  [48, 'double bit ECC error'],
  [62, 'internal micro-controller halt'],
  [63, 'row remapping or page retirement pending, reset the GPU'],
  [64, 'row remapping or page retirement failed'],
  [74, 'NVLink error'],
  [79, 'GPU has fallen off the bus'],
  [92, 'high single-bit ECC error rate'],
  [95, 'uncontained ECC error'],
  [119, 'GSP RPC timeout'],
  [120, 'GSP error'],
  [140, 'unrecovered ECC error'],
]);

/** nvidia-smi's words for a value it cannot give: `[N/A]`, `[Not Supported]`, `[Unknown Error]`, `N/A`. */
const unknown = (v: string | undefined) => v === undefined || v === '' || v === 'N/A' || /^\[.*\]$/.test(v);

function num(v: string | undefined): number | null {
  if (unknown(v)) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

const clamp = (v: number | null, lo: number, hi: number) => (v === null ? null : Math.min(hi, Math.max(lo, v)));

/**
 * A PCI address in one form for both sources: nvidia-smi's `00000000:3B:00.0` and the kernel's `PCI:0000:3b:00`
 * (domain, bus, device; the kernel drops the function) become `0000:3b:00`.
 */
export function busKey(address: string): string | null {
  const m = /([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?\s*$/i.exec(address.trim().replace(/^PCI:/i, ''));
  if (!m) return null;
  return `${m[1].slice(-4)}:${m[2]}:${m[3]}`.toLowerCase();
}

/** One GPU's row of the telemetry query, with its bus. */
export interface SmiSample extends Omit<GpuSampleT, 'xid' | 'fault'> {
  bus: string | null;
}

/** What one run of the telemetry query said. */
export interface SmiReading {
  samples: SmiSample[];
  /** GPUs nvidia-smi named but could not read (`Unable to determine the device handle for GPU …: GPU is lost`). */
  lost: { bus: string | null; reason: string }[];
  /** nvidia-smi could read no GPU at all (NVML failed to initialise, no driver), or null. */
  nvmlError: string | null;
}

/** Lines nvidia-smi prints when NVML itself fails: every GPU of the machine is then out of reach. */
const NVML_FAILURES = [
  /Failed to initialize NVML[^\n]*/i,
  /NVIDIA-SMI has failed because it couldn'?t communicate with the NVIDIA driver[^\n]*/i,
  /NVML library version mismatch[^\n]*/i,
  /Driver\/library version mismatch[^\n]*/i,
  /No devices were found/i,
];

/** A GPU nvidia-smi cannot reach: `Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot…`. */
const LOST_LINE = /Unable to (?:determine|detect) the device handle for GPU\s*((?:[0-9A-Fa-f]{1,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*:\s*(.+)$/;

/**
 * Parses one run of `nvidia-smi` with telemetryArgs(): its stdout and stderr together (the error lines go to either,
 * depending on the driver) and its exit status. Rows it cannot read are left out, never guessed.
 */
export function parseTelemetry(output: string, exitCode: number | null): SmiReading {
  const lines = output.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  const samples: SmiSample[] = [];
  const lost: SmiReading['lost'] = [];
  let nvmlError: string | null = null;
  for (const line of lines) {
    const gone = LOST_LINE.exec(line);
    if (gone) {
      lost.push({ bus: busKey(gone[1]), reason: gone[2].replace(/\s+/g, ' ').replace(/\.$/, '').trim().slice(0, 200) });
      continue;
    }
    const nvml = NVML_FAILURES.map((re) => re.exec(line)).find((m) => m);
    if (nvml) {
      nvmlError ??= line.slice(0, 300);
      continue;
    }
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== TELEMETRY_FIELDS.length) continue;
    const index = num(cells[0]);
    if (index === null || !Number.isInteger(index) || index < 0) continue;
    const ecc = num(cells[8]);
    samples.push({
      index,
      bus: busKey(cells[1]),
      util: clamp(num(cells[2]), 0, 100),
      mem_util: clamp(num(cells[3]), 0, 100),
      mem_used: clamp(num(cells[4]), 0, 1_048_576),
      mem_total: clamp(num(cells[5]), 0, 1_048_576),
      temp: clamp(num(cells[6]), -100, 300),
      power: clamp(num(cells[7]), 0, 10_000),
      ecc_uncorrected: ecc === null ? null : Math.max(0, Math.round(ecc)),
    });
  }
  if (samples.length === 0 && lost.length === 0 && nvmlError === null && exitCode !== 0) {
    nvmlError = (lines[0] ?? `nvidia-smi exited with status ${exitCode ?? 'unknown'}`).slice(0, 300);
  }
  samples.sort((a, b) => a.index - b.index);
  return { samples, lost, nvmlError };
}

/** One `NVRM: Xid` line of the kernel log. */
export interface XidEvent {
  /** Seconds since boot (the kernel log's own stamp), or null when the line has none. */
  at: number | null;
  bus: string | null;
  xid: number;
  text: string;
}

/**
 * The `NVRM: Xid` lines of `dmesg` output (`[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off
 * the bus.`). Lines without a bus (`NVRM: Xid (43, pid: 5678)`) are kept with `bus` null.
 */
export function parseXids(dmesg: string): XidEvent[] {
  const out: XidEvent[] = [];
  for (const line of dmesg.split(/\r?\n/)) {
    const m = /NVRM: Xid \(([^)]*)\):\s*(\d+)\s*,?\s*(.*)$/.exec(line);
    if (!m) continue;
    const stamp = /^\s*\[\s*(\d+(?:\.\d+)?)\]/.exec(line);
    out.push({
      at: stamp ? Number(stamp[1]) : null,
      bus: /PCI:/i.test(m[1]) ? busKey(m[1]) : null,
      xid: Number(m[2]),
      text: m[3].trim().slice(0, 200),
    });
  }
  return out;
}

/**
 * The machine's samples with each GPU's fault, from one nvidia-smi reading and the critical Xids still held:
 * - every GPU the hardware has (`indices`) gets a sample; one nvidia-smi did not list is lost;
 * - a GPU on a lost line (matched by its bus, remembered from earlier samples) is lost, with nvidia-smi's reason;
 * - a GPU with a critical Xid is faulted by it; an Xid without a bus faults every GPU (the driver could not say which).
 */
export function samplesWithHealth(
  indices: readonly number[],
  reading: SmiReading,
  busOf: ReadonlyMap<number, string>,
  xids: readonly XidEvent[],
): GpuSampleT[] {
  const byIndex = new Map(reading.samples.map((s) => [s.index, s]));
  const indexOfBus = new Map([...busOf].map(([i, b]) => [b, i]));
  return indices.map((index) => {
    const s = byIndex.get(index);
    const bus = s?.bus ?? busOf.get(index) ?? null;
    let fault: string | null = null;
    if (reading.nvmlError !== null) fault = reading.nvmlError.slice(0, 300);
    else if (!s) {
      const gone = reading.lost.find((l) => l.bus !== null && indexOfBus.get(l.bus) === index) ?? (reading.lost.length ? reading.lost[0] : undefined);
      fault = gone ? `GPU ${index} is lost: ${gone.reason}` : `GPU ${index} is missing from nvidia-smi`;
    }
    const xid = [...xids].reverse().find((x) => CRITICAL_XIDS.has(x.xid) && (x.bus === null || x.bus === bus));
    if (xid && fault === null) fault = `Xid ${xid.xid}: ${CRITICAL_XIDS.get(xid.xid)}`;
    return {
      index,
      util: s?.util ?? null,
      mem_util: s?.mem_util ?? null,
      mem_used: s?.mem_used ?? null,
      mem_total: s?.mem_total ?? null,
      temp: s?.temp ?? null,
      power: s?.power ?? null,
      ecc_uncorrected: s?.ecc_uncorrected ?? null,
      xid: xid?.xid ?? null,
      fault: fault === null ? null : fault.slice(0, 300),
    };
  });
}

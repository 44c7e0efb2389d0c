/**
 * The agent's GPU sampler (issue 33): every `intervalS` it runs the telemetry query of nvidia-smi and reads the kernel
 * log's Xid lines, and keeps the latest sample for the next heartbeat. A change of health (a GPU lost, NVML failing, a
 * critical Xid, or all well again) is reported at once rather than with the next heartbeat.
 */
import type { GpuTelemetryT } from '../protocol/agent-protocol-schemas.js';
import type { Exec } from './hardware.js';
import { parseTelemetry, parseXids, samplesWithHealth, telemetryArgs, type XidEvent } from './gpu-telemetry.js';

/** Seconds between samples unless the host sets `--gpu-telemetry-interval`. */
export const GPU_TELEMETRY_DEFAULT_S = 10;
/**
 * How long a critical Xid keeps its GPU faulted, seconds since the kernel logged it. The kernel log keeps an Xid until
 * reboot, but a host may recover the GPU without one (`nvidia-smi -r`); after this a GPU that samples healthy is
 * offered again, and one still broken shows it by itself (lost, NVML failing, or a new Xid).
 */
export const XID_HOLD_S = 15 * 60;

export interface GpuSamplerDeps {
  exec: Exec;
  /** Seconds since the host booted (the kernel log's clock). */
  uptimeS: () => number;
  /** The GPUs the hardware has, by nvidia-smi index: each gets a sample, a missing one a fault. */
  indices: readonly number[];
  intervalS: number;
  /** Called after a sample whose health differs from the one before (faults appeared, changed or cleared). */
  onHealthChange?: () => void;
  warn?: (msg: string) => void;
}

export interface GpuSampler {
  /** Takes one sample now (the timer's work; tests call it). */
  sample(): Promise<GpuTelemetryT>;
  /** The latest sample not yet handed over, or undefined; taking it marks it handed over. */
  take(): GpuTelemetryT | undefined;
  /** The latest sample handed over failed to reach the server: hand it over again. */
  giveBack(t: GpuTelemetryT): void;
  start(): void;
  stop(): void;
}

const healthKey = (t: GpuTelemetryT) => JSON.stringify([t.nvml_error, t.gpus.map((g) => g.fault)]);

export function gpuSampler(deps: GpuSamplerDeps): GpuSampler {
  const busOf = new Map<number, string>();
  let fresh: GpuTelemetryT | undefined;
  let lastHealth: string | null = null;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<GpuTelemetryT> | null = null;
  let dmesgWarned = false;

  /** Critical-or-not Xids the kernel logged within XID_HOLD_S; none when the kernel log cannot be read. */
  async function recentXids(): Promise<XidEvent[]> {
    const r = await deps.exec('dmesg', []);
    if (r.code !== 0) {
      if (!dmesgWarned) deps.warn?.(`cannot read the kernel log for Xid errors (dmesg: ${(r.stderr.trim() || `status ${r.code}`).split('\n')[0]}); run the agent as root`);
      dmesgWarned = true;
      return [];
    }
    const now = deps.uptimeS();
    return parseXids(r.stdout).filter((x) => x.at !== null && now - x.at <= XID_HOLD_S && x.at <= now + 1);
  }

  async function sampleOnce(): Promise<GpuTelemetryT> {
    const r = await deps.exec('nvidia-smi', telemetryArgs());
    const reading = r.notFound
      ? { samples: [], lost: [], nvmlError: 'nvidia-smi was not found on PATH' }
      : parseTelemetry(`${r.stdout}\n${r.stderr}`, r.code);
    for (const s of reading.samples) if (s.bus !== null) busOf.set(s.index, s.bus);
    const xids = reading.nvmlError === null ? await recentXids() : [];
    const t: GpuTelemetryT = { nvml_error: reading.nvmlError, gpus: samplesWithHealth(deps.indices, reading, busOf, xids) };
    fresh = t;
    const key = healthKey(t);
    const faulted = t.nvml_error !== null || t.gpus.some((g) => g.fault !== null);
    if (lastHealth === null ? faulted : key !== lastHealth) deps.onHealthChange?.();
    lastHealth = key;
    return t;
  }

  return {
    sample() {
      running ??= sampleOnce().finally(() => { running = null; });
      return running;
    },
    take() {
      const t = fresh;
      fresh = undefined;
      return t;
    },
    giveBack(t) {
      fresh ??= t;
    },
    start() {
      const tick = () => {
        void this.sample().catch((err: unknown) => deps.warn?.(`GPU sample failed: ${(err as Error).message}`));
      };
      tick();
      timer = setInterval(tick, deps.intervalS * 1000);
    },
    stop() {
      clearInterval(timer);
    },
  };
}

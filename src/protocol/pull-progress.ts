/**
 * Pull progress (issue 33 item 4): Docker's pull stream reports each layer on its own (`Downloading` with
 * `progressDetail: {current, total}`, `Download complete`, `Extracting`, `Pull complete`, `Already exists`); the agent
 * sums them into one figure for the image (`PullProgressT`, sent in its status report), and the server says it in the
 * instance's `status_msg`. Pure and shared: the agent aggregates, the server words it, the tests feed recorded events.
 */
import type { PullProgressT } from './agent-protocol-schemas.js';

/** One message of Docker's pull stream (`POST /images/create`), as dockerode's followProgress hands it over. */
export interface DockerProgressEvent {
  status?: string;
  id?: string;
  progressDetail?: { current?: number; total?: number } | null;
  error?: string;
}

interface Layer {
  /** Compressed size, bytes; 0 until Docker says it (its first `Downloading`). */
  size: number;
  downloaded: number;
  extracted: number;
  downloadDone: boolean;
}

/** Statuses of a layer the image does not need to fetch: it is on the host already. */
const PRESENT = new Set(['Already exists']);
const DOWNLOADED = new Set(['Verifying Checksum', 'Download complete']);

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/** Sums one pull's layer events; `summary()` is what the agent reports, null before any layer is known. */
export function pullProgress() {
  const layers = new Map<string, Layer>();
  return {
    add(e: DockerProgressEvent): void {
      // Messages without a layer id (`Pulling from …`, `Digest: …`, `Status: …`) and the tag line say nothing of bytes.
      if (!e.id || !e.status || e.status.startsWith('Pulling from')) return;
      if (PRESENT.has(e.status)) {
        layers.delete(e.id);
        return;
      }
      const l = layers.get(e.id) ?? { size: 0, downloaded: 0, extracted: 0, downloadDone: false };
      layers.set(e.id, l);
      const current = num(e.progressDetail?.current);
      const total = num(e.progressDetail?.total);
      if (e.status === 'Downloading') {
        if (total) l.size = total;
        l.downloaded = Math.min(current, l.size || current);
      } else if (DOWNLOADED.has(e.status)) {
        l.downloadDone = true;
        l.downloaded = l.size;
      } else if (e.status === 'Extracting') {
        if (!l.size && total) l.size = total;
        l.downloadDone = true;
        l.downloaded = l.size;
        l.extracted = Math.min(current, l.size || current);
      } else if (e.status === 'Pull complete') {
        l.downloadDone = true;
        l.downloaded = l.extracted = l.size;
      }
    },
    summary(): PullProgressT | null {
      if (layers.size === 0) return null;
      let total = 0;
      let downloaded = 0;
      let extracted = 0;
      let downloading = false;
      for (const l of layers.values()) {
        total += l.size;
        downloaded += l.downloaded;
        extracted += l.extracted;
        if (!l.downloadDone) downloading = true;
      }
      return downloading ? { phase: 'downloading', done: downloaded, total } : { phase: 'extracting', done: extracted, total };
    },
  };
}

export type PullProgressCounter = ReturnType<typeof pullProgress>;

/** Bytes as Docker's own client prints them: decimal units, one decimal place (`1.2 GB`, `830.5 MB`). */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

/**
 * The instance's `status_msg` while its image is pulled: `pulling image: 1.2 GB of 4.8 GB (25%)`, then
 * `pulling image: extracting 2.1 GB of 4.8 GB (44%)`. The total is of the layers whose size is known: Docker learns a
 * layer's size when its download starts (three at a time by default), so it can grow while the pull goes on.
 */
export function pullProgressText(p: PullProgressT | null | undefined): string {
  // Before the first layer's size (and from agents before issue 33): the words the instance always said.
  if (!p || p.total <= 0) return 'pulling the image';
  const pct = Math.min(100, Math.floor((p.done / p.total) * 100));
  const what = p.phase === 'extracting' ? 'extracting ' : '';
  return `pulling image: ${what}${formatBytes(p.done)} of ${formatBytes(p.total)} (${pct}%)`;
}

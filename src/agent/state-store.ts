/**
 * The agent's state directory: the machine credential (`agent.json`) and what it remembers of each instance
 * (`instances.json`). Owner-only (directory 0700, files 0600), each file replaced atomically (written beside, then
 * renamed), so a crash mid-write leaves the old file whole.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import type { InstanceRecord } from './reconcile-plan.js';

export interface Credentials {
  url: string;
  /** Kept from before the first registration attempt, so a retry names the same machine. */
  registration_id: string;
  machine_id?: number;
  machine_key?: string;
}

export class StateError extends Error {}

const CREDENTIALS_FILE = 'agent.json';
const INSTANCES_FILE = 'instances.json';

export function openStateDir(dir: string) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode does not apply to a directory that already existed.
  chmodSync(dir, 0o700);

  function write(name: string, value: unknown): void {
    const path = join(dir, name);
    const tmp = `${path}.tmp-${process.pid}`;
    writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  }

  function read(name: string): unknown {
    let text: string;
    try {
      text = readFileSync(join(dir, name), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new StateError(`${join(dir, name)} is not valid JSON; move it away to start afresh`);
    }
  }

  return {
    dir,
    readCredentials(): Credentials | undefined {
      const c = read(CREDENTIALS_FILE) as Partial<Credentials> | undefined;
      if (c === undefined) return undefined;
      if (typeof c.url !== 'string' || typeof c.registration_id !== 'string') {
        throw new StateError(`${join(dir, CREDENTIALS_FILE)} lacks url or registration_id; move it away to register again`);
      }
      return c as Credentials;
    },
    writeCredentials(c: Credentials): void {
      write(CREDENTIALS_FILE, c);
    },
    readRecords(): Map<number, InstanceRecord> {
      const raw = read(INSTANCES_FILE);
      const out = new Map<number, InstanceRecord>();
      if (raw && typeof raw === 'object') {
        for (const [k, v] of Object.entries(raw as Record<string, Partial<InstanceRecord>>)) {
          // A damaged entry is dropped: the reconcile adopts what it finds instead.
          if (Number.isInteger(Number(k)) && Number.isInteger(v?.generation) && Number.isInteger(v?.boot)) {
            out.set(Number(k), { generation: v.generation!, boot: v.boot!, stopped: v.stopped === true });
          }
        }
      }
      return out;
    },
    writeRecords(records: ReadonlyMap<number, InstanceRecord>): void {
      write(INSTANCES_FILE, Object.fromEntries([...records].sort(([a], [b]) => a - b)));
    },
  };
}

export type StateDir = ReturnType<typeof openStateDir>;

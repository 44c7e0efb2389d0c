/**
 * The agent's platform: the one place it reads the time, draws randomness and asks the OS about the host, so the rest
 * takes them as dependencies (tests pass their own). The agent runs without the server's src/platform/.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { canBind } from './host-ports.js';
import { programRunner, freeDiskGb, hostFacts, type Exec, type HostFacts } from './hardware.js';

export interface AgentSystem {
  /** Unix seconds. */
  now(): number;
  /** An unguessable id of `[A-Za-z0-9_-]`, 32 characters. */
  randomId(): string;
  /** When the host last booted, Unix seconds. */
  hostBootTime(): number;
  /** Runs a program on PATH (nvidia-smi). */
  exec: Exec;
  hostFacts(): HostFacts;
  freeDiskGb(path: string): Promise<number>;
  isPortFree(ip: string, port: number, proto: 'tcp' | 'udp'): Promise<boolean>;
}

export const realSystem: AgentSystem = {
  now: () => Date.now() / 1000,
  randomId: () => randomBytes(24).toString('base64url'),
  hostBootTime: () => Date.now() / 1000 - os.uptime(),
  exec: programRunner(),
  hostFacts,
  freeDiskGb,
  isPortFree: canBind,
};

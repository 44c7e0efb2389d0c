/** Shared steps of the agent-server tests (not a test file itself): a host registers a machine, a renter rents it. */
import assert from 'node:assert/strict';
import type { TestApp } from './helpers/harness.js';
import type { AgentHardwareT, ObservedInstanceT } from '../src/protocol/agent-protocol-schemas.js';

let regCounter = 0;

export function hardware(over: Partial<AgentHardwareT> = {}): AgentHardwareT {
  return {
    gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564,
    gpus: [0, 1].map((index) => ({ index, name: 'NVIDIA GeForce RTX 4090', uuid: `GPU-${index}`, gpu_ram: 24564, pci_gen: 4, pcie_width: 16, gpu_max_power: 450, compute_cap: 890 })),
    driver_version: '550.54.14', cuda_max_good: 12.4, compute_cap: 890, pci_gen: 4, pcie_bw: 25.2, gpu_max_power: 450,
    cpu_name: 'AMD EPYC 7543 32-Core Processor', cpu_cores: 64, cpu_arch: 'amd64', cpu_ram: 257_000, disk_space: 900,
    hostname: 'gpu-box-1', public_ipaddr: '127.0.0.1', direct_port_start: 41000, direct_port_end: 41099, hardware_declared: true,
    ...over,
  };
}

export const registrationId = () => `reg_${process.pid}_${regCounter++}_abcdefghijkl`;

export interface Host {
  apiKey: string;
  userId: number;
  machineId: number;
  machineKey: string;
  registrationId: string;
}

/** A new host user registers a machine (declared hardware) and lists it at $0.40/GPU/hour. */
export async function hostWithMachine(app: TestApp, opts: { list?: boolean; hw?: Partial<AgentHardwareT> } = {}): Promise<Host> {
  const { user, api_key } = await app.createUser();
  const registration_id = registrationId();
  const reg = await app.request('POST', '/api/v0/machines/register/', {
    key: api_key, body: { registration_id, agent_version: '0.0.0-test', hardware: hardware(opts.hw) },
  });
  assert.equal(reg.status, 200, reg.raw);
  const host = { apiKey: api_key, userId: user.id, machineId: reg.body.machine_id, machineKey: reg.body.machine_key, registrationId: registration_id };
  if (opts.list !== false) {
    const listed = await app.request('PUT', '/api/v0/machines/create_asks/', { key: api_key, body: { machine: host.machineId, price_gpu: 0.4, price_min_bid: 0.2, end_date: null } });
    assert.equal(listed.status, 200, listed.raw);
  }
  return host;
}

export async function desired(app: TestApp, host: Host, query: Record<string, string> = {}) {
  const res = await app.request('GET', '/api/v0/agent/desired/', { key: host.machineKey, query });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

export async function report(app: TestApp, host: Host, observed: ObservedInstanceT[], desiredVersion: number | null, extra: Record<string, unknown> = {}) {
  const res = await app.request('PUT', '/api/v0/agent/status/', { key: host.machineKey, body: { agent_version: '0.0.0-test', desired_version: desiredVersion, observed, ...extra } });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

export function observed(instanceId: number, boot: number, over: Partial<ObservedInstanceT> = {}): ObservedInstanceT {
  return {
    instance_id: instanceId, generation: 1, boot, state: 'running', container_id: `c${instanceId}`, exit_code: null,
    ports: { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '41007' }] }, error: null, ...over,
  };
}

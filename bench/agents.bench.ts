// Real hosts at scale (issue 13 "Scale"): 10,000 machines' agents, driven at the protocol level by this process (a
// load generator, not 10,000 processes), against three server processes on one PostgreSQL database. Every agent holds
// its desired-state long-poll and sends its status report (the heartbeat) every 10 s; meanwhile renters rent
// instances on listed machines. Figures: heartbeat latency p99 (≤ 50 ms), the servers' CPU in all (≤ 1 core), and
// how long a desired-state change (a rent, committed through any server) takes to reach its agent's long-poll
// (≤ 1 s p99). Sizes: GPUPLANE_BENCH_AGENTS (default 10000), GPUPLANE_BENCH_AGENTS_SECONDS (measured window, 60).
import http from 'node:http';
import pg from 'pg';
import { cpuMs, defineBench, startGpuplane, type Figure } from './lib.js';

const AGENTS = Number(process.env.GPUPLANE_BENCH_AGENTS ?? 10_000);
const WINDOW_S = Number(process.env.GPUPLANE_BENCH_AGENTS_SECONDS ?? 60);
const SERVERS = 3;
const HEARTBEAT_S = 10;
/** The long-poll's hold, as `gpuplane agent` asks for it (DESIRED_WAIT_DEFAULT_S). */
const WAIT_S = 25;
/** Machines listed for rent; one instance is rented on one of them every RENT_EVERY_MS during the window. */
const LISTED = 200;
const RENT_EVERY_MS = 250;
const PG_URL = process.env.GPUPLANE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const HARDWARE = {
  gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564,
  gpus: [0, 1].map((index) => ({ index, name: 'NVIDIA GeForce RTX 4090', uuid: `GPU-${index}`, gpu_ram: 24564, pci_gen: 4, pcie_width: 16, gpu_max_power: 450, compute_cap: 890 })),
  driver_version: '550.54.14', cuda_max_good: 12.4, compute_cap: 890, pci_gen: 4, pcie_bw: 25.2, gpu_max_power: 450,
  cpu_name: 'AMD EPYC 7543', cpu_cores: 64, cpu_arch: 'amd64', cpu_ram: 257_000, disk_space: 900,
  hostname: 'bench-box', public_ipaddr: '127.0.0.1', direct_port_start: 41000, direct_port_end: 41099, hardware_declared: true,
};

/** One keep-alive socket pool per server, as many sockets as asked for (10,000 long-polls are held at once). */
const pools = new Map<string, http.Agent>();
function request(base: string, method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(path, base);
  let agent = pools.get(base);
  if (!agent) pools.set(base, (agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 4096 })));
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method, agent,
      headers: { authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: text });
        }
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(s.length * p))] * 10) / 10 : Number.NaN;
};

async function inParallel<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    for (let i = next++; i < n; i = next++) out[i] = await fn(i);
  }));
  return out;
}

interface Agent {
  machineId: number;
  key: string;
  server: string;
  version: number | null;
  /** Instance ids rented on this machine and the time each rent was answered, until its long-poll shows it. */
  pending: Map<number, number>;
}

export default defineBench({
  name: 'agents',
  description: `${AGENTS} agents (heartbeat every ${HEARTBEAT_S} s, long-poll held) against ${SERVERS} server processes on one PostgreSQL`,
  async run(ctx) {
    const schema = `bench_agents_${process.pid}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`);
    const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const env = { GPUPLANE_DATABASE_URL: url, GPUPLANE_SIM_MACHINES: '0', GPUPLANE_SECRET_KEY: 'bench-agents-secret-key-0123456789' };
    const servers = [];
    let stopping = false;
    try {
      // One at a time: the first migrates the database.
      for (let i = 0; i < SERVERS; i++) servers.push(await startGpuplane(ctx, { env }));
      const urls = servers.map((s) => s.url);
      const owner = servers[0].key;
      const host = (await request(urls[0], 'POST', '/_emu/users', owner, { email: 'host@bench.example' })).body.api_key as string;
      const renter = (await request(urls[0], 'POST', '/_emu/users', owner, { email: 'renter@bench.example', credit: 1e6 })).body.api_key as string;

      const t0 = performance.now();
      const agents: Agent[] = await inParallel(AGENTS, 24, async (i) => {
        const server = urls[i % SERVERS];
        const reg = await request(server, 'POST', '/api/v0/machines/register/', host, {
          registration_id: `bench_${process.pid}_${i.toString().padStart(6, '0')}`, agent_version: 'bench', hardware: HARDWARE,
        });
        if (reg.status !== 200) throw new Error(`register ${i}: ${reg.status} ${JSON.stringify(reg.body)}`);
        // As `gpuplane agent` does: the first report right after registering.
        const first = await request(server, 'PUT', '/api/v0/agent/status/', reg.body.machine_key, { agent_version: 'bench', desired_version: null, observed: [] });
        if (first.status !== 200) throw new Error(`first report ${i}: ${first.status} ${JSON.stringify(first.body)}`);
        return { machineId: reg.body.machine_id, key: reg.body.machine_key, server, version: null, pending: new Map() };
      });
      ctx.log(`  registered ${AGENTS} machines in ${Math.round((performance.now() - t0) / 1000)} s`);
      const listed = agents.slice(0, LISTED);
      await inParallel(listed.length, 8, async (i) => {
        const r = await request(urls[i % SERVERS], 'PUT', '/api/v0/machines/create_asks/', host, { machine: listed[i].machineId, price_gpu: 0.4, end_date: null });
        if (r.status !== 200) throw new Error(`list: ${r.status} ${JSON.stringify(r.body)}`);
      });

      // Measured only inside the window; the loops run from before it to its end.
      let measuring = false;
      const heartbeatMs: number[] = [];
      const changeMs: number[] = [];
      /** When an agent's long-poll first showed each instance. */
      const seenAt = new Map<number, number>();
      let errors = 0;
      const firstError: string[] = [];
      const fail = (what: string) => {
        errors++;
        if (firstError.length < 5) firstError.push(what);
      };

      const poll = async (a: Agent): Promise<void> => {
        while (!stopping) {
          const q = a.version === null ? '' : `?after=${a.version}&wait=${WAIT_S}`;
          let r;
          try {
            r = await request(a.server, 'GET', `/api/v0/agent/desired/${q}`, a.key);
          } catch (err) {
            if (!stopping) fail(`poll: ${(err as Error).message}`);
            return;
          }
          if (r.status !== 200) {
            if (!stopping) fail(`poll ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
            return;
          }
          const at = performance.now();
          a.version = r.body.version;
          for (const inst of r.body.instances as { instance_id: number }[]) {
            if (!seenAt.has(inst.instance_id)) seenAt.set(inst.instance_id, at);
            const since = a.pending.get(inst.instance_id);
            if (since === undefined) continue;
            a.pending.delete(inst.instance_id);
            if (measuring) changeMs.push(Math.max(0, at - since));
          }
        }
      };
      const heartbeat = async (a: Agent): Promise<void> => {
        const s = performance.now();
        try {
          const r = await request(a.server, 'PUT', '/api/v0/agent/status/', a.key, { agent_version: 'bench', desired_version: a.version, observed: [] });
          if (r.status !== 200) return fail(`status ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
          if (measuring) heartbeatMs.push(performance.now() - s);
        } catch (err) {
          fail(`status: ${(err as Error).message}`);
        }
      };

      // Agents start at different times, so their long-polls renew spread over the hold, not all at once.
      const polls = agents.map(async (a) => {
        await new Promise((r) => setTimeout(r, Math.random() * WAIT_S * 1000));
        return poll(a);
      });
      // Heartbeats spread evenly over the interval: agent i at i/N of it.
      const start = performance.now();
      const sent = new Array<number>(AGENTS).fill(0);
      const beat = setInterval(() => {
        const elapsed = (performance.now() - start) / 1000;
        for (let i = 0; i < AGENTS; i++) {
          const due = Math.floor((elapsed - (i / AGENTS) * HEARTBEAT_S) / HEARTBEAT_S) + 1;
          if (due > sent[i]) {
            sent[i] = due;
            void heartbeat(agents[i]);
          }
        }
      }, 20);
      let rentCounter = 0;
      const rents = setInterval(() => {
        const a = listed[rentCounter++ % listed.length];
        const server = urls[rentCounter % SERVERS];
        request(server, 'PUT', `/api/v0/asks/${a.machineId * 100 + 1}/`, renter, { image: 'busybox', disk: 1 }).then((r) => {
          // The agent's poll may answer before the rent's own reply arrives here: the change reached it first.
          if (r.status === 200 && seenAt.has(r.body.new_contract)) {
            if (measuring) changeMs.push(0);
          } else if (r.status === 200) a.pending.set(r.body.new_contract, performance.now());
          // A machine whose GPUs are all taken stops being offered: not a failure of the protocol.
          else if (r.status !== 410) fail(`rent ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
        }, (err) => fail(`rent: ${(err as Error).message}`));
      }, RENT_EVERY_MS);

      // Warm-up: every agent polling and heartbeating (one hold), then the window.
      await new Promise((r) => setTimeout(r, Math.max(HEARTBEAT_S, WAIT_S) * 1000));
      const cpuBefore = servers.map((s) => cpuMs(s.child.pid));
      const w0 = performance.now();
      measuring = true;
      await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
      measuring = false;
      const windowS = (performance.now() - w0) / 1000;
      const cores = servers.reduce((sum, s, i) => sum + (cpuMs(s.child.pid) - cpuBefore[i]), 0) / 1000 / windowS;
      clearInterval(beat);
      clearInterval(rents);
      stopping = true;
      if (errors) ctx.log(`  ${errors} failed requests, first: ${firstError.join(' | ')}`);
      const figures: Figure[] = [
        { name: 'heartbeats measured', value: heartbeatMs.length, unit: `in ${Math.round(windowS)} s (${Math.round(heartbeatMs.length / windowS)}/s)` },
        { name: 'heartbeat latency p50', value: pct(heartbeatMs, 0.5), unit: 'ms' },
        { name: 'heartbeat latency p99', value: pct(heartbeatMs, 0.99), unit: 'ms', target: { op: '<=', value: 50 } },
        { name: 'server CPU, 3 processes in all', value: Math.round(cores * 100) / 100, unit: 'cores', target: { op: '<=', value: 1 } },
        { name: 'desired-state changes measured', value: changeMs.length, unit: 'rents' },
        { name: 'desired-state change to agent p99', value: pct(changeMs, 0.99), unit: 'ms', target: { op: '<=', value: 1000 } },
        { name: 'failed requests', value: errors, unit: '', target: { op: '<=', value: 0 } },
      ];
      for (const s of servers) await s.stop();
      await Promise.allSettled(polls);
      return figures;
    } finally {
      stopping = true;
      for (const s of servers) await s.stop();
      for (const a of pools.values()) a.destroy();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await admin.end();
    }
  },
});

// Real hosts at scale (issue 13 "Scale"): 10,000 machines' agents, driven at the protocol level by this process and
// forked load processes (agents-load.ts: a load generator, not 10,000 processes), against three server processes on one PostgreSQL database. Every agent holds
// its desired-state long-poll and sends its status report (the heartbeat) every 10 s; meanwhile renters rent
// instances on listed machines. Figures: heartbeat latency p99 (≤ 50 ms), the servers' CPU in all (≤ 1 core), and
// how long a desired-state change (a rent, committed through any server) takes to reach its agent's long-poll
// (≤ 1 s p99). Sizes: GPUPLANE_BENCH_AGENTS (default 10000), GPUPLANE_BENCH_AGENTS_SECONDS (measured window, 60).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { cpuMs, defineBench, startGpuplane, type Figure } from './lib.js';
import { serverUrl } from './pg.js';
import { closePools, driveAgents, HEARTBEAT_S, inParallel, registerShare, request, WAIT_S, type LoadReport, type Share } from './agents-load.js';

const AGENTS = Number(process.env.GPUPLANE_BENCH_AGENTS ?? 10_000);
const WINDOW_S = Number(process.env.GPUPLANE_BENCH_AGENTS_SECONDS ?? 60);
const SERVERS = 3;
/** Machines listed for rent; one instance is rented on one of them every RENT_EVERY_MS during the window. */
const LISTED = 200;
const RENT_EVERY_MS = 250;
/** Agents beyond the listed ones are driven by forked load processes, this many agents each at most. */
const AGENTS_PER_CHILD = 4000;
const PG_URL = process.env.GPUPLANE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const HARDWARE = {
  gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564,
  gpus: [0, 1].map((index) => ({ index, name: 'NVIDIA GeForce RTX 4090', uuid: `GPU-${index}`, gpu_ram: 24564, pci_gen: 4, pcie_width: 16, gpu_max_power: 450, compute_cap: 890 })),
  driver_version: '550.54.14', cuda_max_good: 12.4, compute_cap: 890, pci_gen: 4, pcie_bw: 25.2, gpu_max_power: 450,
  cpu_name: 'AMD EPYC 7543', cpu_cores: 64, cpu_arch: 'amd64', cpu_ram: 257_000, disk_space: 900,
  hostname: 'bench-box', public_ipaddr: '127.0.0.1', direct_port_start: 41000, direct_port_end: 41099, hardware_declared: true,
};

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(s.length * p))] * 10) / 10 : Number.NaN;
};

/** A forked load process registering and driving a share of the agents (agents-load.ts). */
function loadChild(share: Share) {
  // GPUPLANE_BENCH_LOAD_SCRIPT: agents-load.ts built to one JavaScript file, for a machine without tsx (a GPU box).
  const built = process.env.GPUPLANE_BENCH_LOAD_SCRIPT;
  const child: ChildProcess = fork(built ?? fileURLToPath(new URL('./agents-load.ts', import.meta.url)), ['--agents-load-child'], {
    execArgv: built ? [] : ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = (type: string) => new Promise<any>((resolve, reject) => {
    const on = (m: any) => {
      if (m?.type === type) {
        child.off('message', on);
        resolve(m);
      }
    };
    child.on('message', on);
    child.once('exit', (code) => reject(new Error(`load process exited (${code}) before ${type}`)));
  });
  const started = next('started');
  child.send({ type: 'start', share });
  return {
    started,
    measure: (on: boolean) => child.send({ type: 'measure', on }),
    async stop(): Promise<LoadReport> {
      const reported = next('report');
      child.send({ type: 'stop' });
      return (await reported).report as LoadReport;
    },
    kill: () => child.kill('SIGKILL'),
  };
}

export default defineBench({
  name: 'agents',
  description: `${AGENTS} agents (heartbeat every ${HEARTBEAT_S} s, long-poll held) against ${SERVERS} server processes on one PostgreSQL`,
  async run(ctx) {
    const schema = `bench_agents_${process.pid}`;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; CREATE SCHEMA "${schema}"`);
    // The servers reach a local database through its Unix socket, as every PostgreSQL bench does (bench/pg.ts).
    const url = serverUrl(new URL(`${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`));
    ctx.log(`  PostgreSQL schema ${schema}${url.includes('host=') ? ', through the Unix socket' : ', over TCP'}`);
    // One host account registers the whole fleet at once: its operator raises the per-account caps (README settings).
    const env = {
      GPUPLANE_DATABASE_URL: url, GPUPLANE_SIM_MACHINES: '0', GPUPLANE_SECRET_KEY: 'bench-agents-secret-key-0123456789',
      GPUPLANE_HOST_MACHINES_MAX: String(AGENTS), GPUPLANE_HOST_REGISTRATIONS_PER_HOUR: String(AGENTS),
    };
    const servers = [];
    let stopping = false;
    const children: ReturnType<typeof loadChild>[] = [];
    try {
      // One at a time: the first migrates the database.
      for (let i = 0; i < SERVERS; i++) servers.push(await startGpuplane(ctx, { env }));
      const urls = servers.map((s) => s.url);
      const owner = servers[0].key;
      const host = (await request(urls[0], 'POST', '/_emu/users', owner, { email: 'host@bench.example' })).body.api_key as string;
      const renter = (await request(urls[0], 'POST', '/_emu/users', owner, { email: 'renter@bench.example', credit: 1e6 })).body.api_key as string;

      // Each load process registers its share, driving every agent from its registration on (agents-load.ts); this
      // process registers and drives the listed machines (their long-polls time the rents' changes).
      let measuring = false;
      const changeMs: number[] = [];
      /** Rents answered inside the window, by instance: when the reply came (wall clock, ms). */
      const pending = new Map<number, number>();
      /** When an agent's long-poll first showed each instance. */
      const seenAt = new Map<number, number>();
      let rentErrors = 0;
      const rentFirstErrors: string[] = [];
      const failRent = (what: string) => {
        rentErrors++;
        if (rentFirstErrors.length < 5) rentFirstErrors.push(what);
      };
      const own = driveAgents((id, at) => {
        if (seenAt.has(id)) return;
        seenAt.set(id, at);
        const since = pending.get(id);
        if (since === undefined) return;
        pending.delete(id);
        if (measuring) changeMs.push(Math.max(0, at - since));
      });
      const share = (from: number, to: number, width: number): Share => ({ urls, hostKey: host, prefix: `bench_${process.pid}`, from, to, hardware: HARDWARE, width });
      const t0 = performance.now();
      for (let off = LISTED; off < AGENTS; off += AGENTS_PER_CHILD) children.push(loadChild(share(off, Math.min(AGENTS, off + AGENTS_PER_CHILD), 8)));
      const listed = await registerShare(own, share(0, LISTED, 8));
      await Promise.all(children.map((c) => c.started));
      ctx.log(`  registered ${AGENTS} machines in ${Math.round((performance.now() - t0) / 1000)} s`);
      await inParallel(listed.length, 8, async (i) => {
        const r = await request(urls[i % SERVERS], 'PUT', '/api/v0/machines/create_asks/', host, { machine: listed[i].machineId, price_gpu: 0.4, end_date: null });
        if (r.status !== 200) throw new Error(`list: ${r.status} ${JSON.stringify(r.body)}`);
      });

      let rentCounter = 0;
      // Only rents answered inside the window are timed: one made during the warm-up may wait for its agent's first poll.
      const rents = setInterval(() => {
        const a = listed[rentCounter++ % listed.length];
        const server = urls[rentCounter % SERVERS];
        request(server, 'PUT', `/api/v0/asks/${a.machineId * 100 + 1}/`, renter, { image: 'busybox', disk: 1 }).then((r) => {
          if (r.status === 200) {
            if (!measuring) return;
            // The agent's poll may answer before the rent's own reply arrives here: the change reached it first.
            if (seenAt.has(r.body.new_contract)) changeMs.push(0);
            else pending.set(r.body.new_contract, Date.now());
          }
          // A machine whose GPUs are all taken stops being offered: not a failure of the protocol.
          else if (r.status !== 410) failRent(`rent ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
        }, (err) => failRent(`rent: ${(err as Error).message}`));
      }, RENT_EVERY_MS);

      // Warm-up: every agent polling and heartbeating (one hold), then the window.
      await new Promise((r) => setTimeout(r, Math.max(HEARTBEAT_S, WAIT_S) * 1000));
      const cpuBefore = servers.map((s) => cpuMs(s.child.pid));
      const w0 = performance.now();
      measuring = true;
      own.measure(true);
      for (const c of children) c.measure(true);
      await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
      measuring = false;
      own.measure(false);
      for (const c of children) c.measure(false);
      const windowS = (performance.now() - w0) / 1000;
      const cores = servers.reduce((sum, s, i) => sum + (cpuMs(s.child.pid) - cpuBefore[i]), 0) / 1000 / windowS;
      clearInterval(rents);
      stopping = true;
      const reports = [own.stop(), ...(await Promise.all(children.map((c) => c.stop())))];
      const heartbeatMs = reports.flatMap((r) => r.heartbeatMs);
      const errors = rentErrors + reports.reduce((n, r) => n + r.errors, 0);
      const firstError = [...rentFirstErrors, ...reports.flatMap((r) => r.firstErrors)].slice(0, 5);
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
      await Promise.allSettled(own.polls);
      return figures;
    } finally {
      stopping = true;
      for (const c of children) c.kill();
      for (const s of servers) await s.stop();
      closePools();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await admin.end();
    }
  },
});

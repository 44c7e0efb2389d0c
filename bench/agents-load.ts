// The agents of the agents bench (agents.bench.ts), driven at the protocol level: each holds its desired-state
// long-poll and sends its status report every HEARTBEAT_S. One process cannot hold 10,000 agents' sockets here (the
// open-file limit is 20,000 and cannot be raised), so the bench drives a share in itself and forks this file for the
// rest: as a child it takes its share over IPC, and reports its heartbeat latencies when told to stop.
import http from 'node:http';

export const HEARTBEAT_S = 10;
/** The long-poll's hold, as `gpuplane agent` asks for it (DESIRED_WAIT_DEFAULT_S). */
export const WAIT_S = 25;

export interface AgentRef {
  machineId: number;
  key: string;
  server: string;
}

export interface LoadReport {
  heartbeatMs: number[];
  errors: number;
  firstErrors: string[];
}

/** One keep-alive socket pool per server, as many sockets as asked for (every agent holds a long-poll at once). */
const pools = new Map<string, http.Agent>();

/**
 * Issue 33: each heartbeat carries a GPU sample of the machine's two GPUs, as a real agent's does (gpu-sampler.ts),
 * unless GPUPLANE_BENCH_AGENTS_TELEMETRY=0. Healthy, so an idle machine's heartbeat stays one statement.
 */
const TELEMETRY = process.env.GPUPLANE_BENCH_AGENTS_TELEMETRY !== '0';
const gpuSample = () => ({
  nvml_error: null,
  gpus: [0, 1].map((index) => ({
    index, util: Math.round(Math.random() * 1000) / 10, mem_util: 40, mem_used: 20_480 + Math.round(Math.random() * 1000), mem_total: 24_564,
    temp: 60 + Math.round(Math.random() * 10), power: 300.25, ecc_uncorrected: 0, xid: null, fault: null,
  })),
});

export function request(base: string, method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: any }> {
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

export function closePools(): void {
  for (const a of pools.values()) a.destroy();
}

/** Registers one machine as `gpuplane agent` does on first start: registration, then its first report at once. */
export async function registerAgent(server: string, hostKey: string, registrationId: string, hardware: unknown): Promise<AgentRef> {
  const reg = await request(server, 'POST', '/api/v0/machines/register/', hostKey, { registration_id: registrationId, agent_version: 'bench', hardware });
  if (reg.status !== 200) throw new Error(`register ${registrationId}: ${reg.status} ${JSON.stringify(reg.body)}`);
  const first = await request(server, 'PUT', '/api/v0/agent/status/', reg.body.machine_key, { agent_version: 'bench', desired_version: null, observed: [] });
  if (first.status !== 200) throw new Error(`first report ${registrationId}: ${first.status} ${JSON.stringify(first.body)}`);
  return { machineId: reg.body.machine_id, key: reg.body.machine_key, server };
}

/**
 * Drives agents from the moment each is `add`ed (just registered, its first report sent), as `gpuplane agent` runs
 * from its start: a report every HEARTBEAT_S after the last, and the desired-state long-poll held from the start. A
 * fleet registered over half a minute would otherwise go silent before its load began, and its machines offline.
 * `onSeen`: every instance an agent's long-poll shows, with the wall-clock time (ms) it was seen.
 */
export function driveAgents(onSeen?: (instanceId: number, atMs: number) => void) {
  let stopping = false;
  let measuring = false;
  const report: LoadReport = { heartbeatMs: [], errors: 0, firstErrors: [] };
  const fail = (what: string) => {
    report.errors++;
    if (report.firstErrors.length < 5) report.firstErrors.push(what);
  };
  const versions = new Map<number, number | null>();
  const agents: AgentRef[] = [];
  /** When each agent's next report is due (performance.now() ms). */
  const nextAt: number[] = [];
  const polls: Promise<void>[] = [];

  const poll = async (a: AgentRef): Promise<void> => {
    while (!stopping) {
      const version = versions.get(a.machineId) ?? null;
      const q = version === null ? '' : `?after=${version}&wait=${WAIT_S}`;
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
      const at = Date.now();
      versions.set(a.machineId, r.body.version);
      for (const inst of r.body.instances as { instance_id: number }[]) onSeen?.(inst.instance_id, at);
    }
  };
  const heartbeat = async (a: AgentRef): Promise<void> => {
    const s = performance.now();
    try {
      const r = await request(a.server, 'PUT', '/api/v0/agent/status/', a.key, {
        agent_version: 'bench', desired_version: versions.get(a.machineId) ?? null, observed: [], ...(TELEMETRY ? { gpu_telemetry: gpuSample() } : {}),
      });
      if (r.status !== 200) return fail(`status ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
      if (measuring) report.heartbeatMs.push(performance.now() - s);
    } catch (err) {
      fail(`status: ${(err as Error).message}`);
    }
  };

  const beat = setInterval(() => {
    const now = performance.now();
    for (let i = 0; i < agents.length; i++) {
      if (now < nextAt[i]) continue;
      nextAt[i] += HEARTBEAT_S * 1000;
      void heartbeat(agents[i]);
    }
  }, 20);

  return {
    /** A registered agent (its first report just sent) starts here. */
    add(a: AgentRef): void {
      agents.push(a);
      nextAt.push(performance.now() + HEARTBEAT_S * 1000);
      polls.push(poll(a));
    },
    measure(on: boolean): void {
      measuring = on;
    },
    /** Stops the heartbeats; the polls end when the servers go (their errors then are not counted). */
    stop(): LoadReport {
      stopping = true;
      clearInterval(beat);
      return report;
    },
    polls,
  };
}

/** Runs `fn` over 0..n-1, `width` at a time. */
export async function inParallel<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    for (let i = next++; i < n; i = next++) out[i] = await fn(i);
  }));
  return out;
}

/** A share of the fleet for a load process: registrations `from`..`to`-1, spread over the servers. */
export interface Share {
  urls: string[];
  hostKey: string;
  prefix: string;
  from: number;
  to: number;
  hardware: unknown;
  /** Registrations in flight at once. */
  width: number;
}

/** Registers a share's agents, driving each from its registration on; resolves once all are registered. */
export async function registerShare(load: ReturnType<typeof driveAgents>, s: Share): Promise<AgentRef[]> {
  return inParallel(s.to - s.from, s.width, async (k) => {
    const i = s.from + k;
    const a = await registerAgent(s.urls[i % s.urls.length], s.hostKey, `${s.prefix}_${i.toString().padStart(6, '0')}`, s.hardware);
    load.add(a);
    return a;
  });
}

type Message = { type: 'start'; share: Share } | { type: 'measure'; on: boolean } | { type: 'stop' };

// As a forked child: drive the share the parent sends.
if (process.send && process.argv.includes('--agents-load-child')) {
  let load: ReturnType<typeof driveAgents> | null = null;
  process.on('message', (m: Message) => {
    if (m.type === 'start') {
      const own = (load = driveAgents());
      registerShare(own, m.share).then(() => process.send!({ type: 'started' }), (err: Error) => {
        console.error(err.message);
        process.exit(1);
      });
    } else if (m.type === 'measure') load?.measure(m.on);
    else if (m.type === 'stop' && load) {
      process.send!({ type: 'report', report: load.stop() }, () => {
        closePools();
        process.exit(0);
      });
    }
  });
}

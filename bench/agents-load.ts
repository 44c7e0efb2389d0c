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

/**
 * Drives `agents`, the share starting at `offset` of `total` (heartbeats spread evenly over the interval: agent i at
 * i/total of it; long-polls started at random over one hold, as agents that start at different times).
 * `onSeen`: every instance an agent's long-poll shows, with the wall-clock time (ms) it was seen.
 */
export function driveAgents(agents: AgentRef[], offset: number, total: number, onSeen?: (instanceId: number, atMs: number) => void) {
  let stopping = false;
  let measuring = false;
  const report: LoadReport = { heartbeatMs: [], errors: 0, firstErrors: [] };
  const fail = (what: string) => {
    report.errors++;
    if (report.firstErrors.length < 5) report.firstErrors.push(what);
  };
  const versions = new Map<number, number | null>();

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
      const r = await request(a.server, 'PUT', '/api/v0/agent/status/', a.key, { agent_version: 'bench', desired_version: versions.get(a.machineId) ?? null, observed: [] });
      if (r.status !== 200) return fail(`status ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
      if (measuring) report.heartbeatMs.push(performance.now() - s);
    } catch (err) {
      fail(`status: ${(err as Error).message}`);
    }
  };

  const polls = agents.map(async (a) => {
    await new Promise((r) => setTimeout(r, Math.random() * WAIT_S * 1000));
    if (!stopping) await poll(a);
  });
  const start = performance.now();
  const sent = new Array<number>(agents.length).fill(0);
  const beat = setInterval(() => {
    const elapsed = (performance.now() - start) / 1000;
    for (let i = 0; i < agents.length; i++) {
      const due = Math.floor((elapsed - ((offset + i) / total) * HEARTBEAT_S) / HEARTBEAT_S) + 1;
      if (due > sent[i]) {
        sent[i] = due;
        void heartbeat(agents[i]);
      }
    }
  }, 20);

  return {
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

type Message = { type: 'start'; agents: AgentRef[]; offset: number; total: number } | { type: 'measure'; on: boolean } | { type: 'stop' };

// As a forked child: drive the share the parent sends.
if (process.send && process.argv.includes('--agents-load-child')) {
  let load: ReturnType<typeof driveAgents> | null = null;
  process.on('message', (m: Message) => {
    if (m.type === 'start') {
      load = driveAgents(m.agents, m.offset, m.total);
      process.send!({ type: 'started' });
    } else if (m.type === 'measure') load?.measure(m.on);
    else if (m.type === 'stop' && load) {
      process.send!({ type: 'report', report: load.stop() }, () => {
        closePools();
        process.exit(0);
      });
    }
  });
}

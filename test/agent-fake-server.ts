/**
 * A stand-in for the server side of the agent protocol (docs/AGENT-PROTOCOL.md), for tests that drive the real agent:
 * every request is checked against the protocol's schemas (src/protocol/agent-protocol-schemas.ts), and anything that
 * does not conform is recorded in `violations` (tests assert there are none) and answered 400. Tests change the
 * desired state and wait on the agent's reports, which arrive as signals: no sleeps.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Compile } from 'typebox/compile';
import type { TSchema } from 'typebox';
import {
  DesiredQuery, LogAnswerBody, RegisterBody, StatusBody,
  type DesiredInstanceT, type LogRequestT,
} from '../src/protocol/agent-protocol-schemas.js';
import type { AgentRegisterRequest, AgentStatusRequest, AgentLogAnswer } from '../src/sdk/api/agent.js';

const checkers = new Map<TSchema, ReturnType<typeof Compile>>();
function violation(schema: TSchema, value: unknown): string | null {
  let c = checkers.get(schema);
  if (!c) checkers.set(schema, (c = Compile(schema)));
  const e = [...c.Errors(value)][0];
  return e ? `${e.instancePath || '/'} ${e.message}` : null;
}

export interface FakeServerOptions {
  apiKey?: string;
  /** What the status reply says the heartbeat interval is (omitted when undefined). */
  heartbeatInterval?: number;
  /** Answers this many registrations with a 503 first (a server restarting). */
  failRegistrations?: number;
  /** Machine ids count up from here (tests sharing one Docker daemon must not share machine ids). @default 100 */
  machineIdBase?: number;
}

type Waiter<T> = { pred: (v: T) => boolean; resolve: (v: T) => void };

export async function startFakeServer(opts: FakeServerOptions = {}) {
  const apiKey = opts.apiKey ?? 'gpk_fake_host_key_0123456789abcdef';
  let machineId = opts.machineIdBase ?? 100;
  let machineKey: string | null = null;
  const byRegistration = new Map<string, number>();
  const registrations: AgentRegisterRequest[] = [];
  const statuses: AgentStatusRequest[] = [];
  const violations: string[] = [];
  let version = 1;
  let instances: DesiredInstanceT[] = [];
  const logRequests = new Map<string, LogRequestT>();
  const logAnswers = new Map<string, (a: AgentLogAnswer) => void>();
  let heldPolls: { res: ServerResponse; timer: NodeJS.Timeout | null }[] = [];
  /** While set, desired-state polls are held and never answered: a long-poll that died without an error. */
  let swallowPolls = false;
  let desiredCalls = 0;
  let failedRegistrations = 0;
  /** Polls cut off by `killHeldPolls`: open, never answered, as a connection that died silently. */
  const deadPolls: ServerResponse[] = [];
  const statusWaiters: Waiter<AgentStatusRequest>[] = [];
  const pollHeldWaiters: (() => void)[] = [];

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, status: number, error: string, msg: string) => send(res, status, { success: false, error, msg });
  const desiredReply = () => ({ success: true, version, instances, log_requests: [...logRequests.values()] });

  function flushPolls(): void {
    if (swallowPolls) return;
    const held = heldPolls;
    heldPolls = [];
    for (const p of held) {
      if (p.timer) clearTimeout(p.timer);
      send(p.res, 200, desiredReply());
    }
  }

  function bump(): void {
    version++;
    flushPolls();
  }

  async function body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? undefined : JSON.parse(text);
  }

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const route = `${req.method} ${url.pathname}`;
      const checked = (schema: TSchema, value: unknown): boolean => {
        const v = violation(schema, value);
        if (v === null) return true;
        violations.push(`${route}: ${v}`);
        fail(res, 400, 'bad_request', v);
        return false;
      };
      if (route === 'POST /api/v0/machines/register/') {
        if (bearer !== apiKey) return fail(res, 401, 'auth_error', 'invalid API key');
        const b = await body(req);
        if (!checked(RegisterBody, b)) return;
        const r = b as AgentRegisterRequest;
        registrations.push(r);
        if (failedRegistrations < (opts.failRegistrations ?? 0)) {
          failedRegistrations++;
          return fail(res, 503, 'service_unavailable', 'restarting');
        }
        const id = byRegistration.get(r.registration_id) ?? ++machineId;
        byRegistration.set(r.registration_id, id);
        machineKey = `gpm_${randomBytes(24).toString('hex')}`;
        return send(res, 200, { success: true, machine_id: id, machine_key: machineKey });
      }
      if (!url.pathname.startsWith('/api/v0/agent/')) return fail(res, 404, 'not_found', `no route ${route}`);
      if (machineKey === null || bearer !== machineKey) return fail(res, 401, 'auth_error', 'invalid machine key');
      if (route === 'PUT /api/v0/agent/status/') {
        const b = await body(req);
        if (!checked(StatusBody, b)) return;
        const s = b as AgentStatusRequest;
        statuses.push(s);
        for (const w of [...statusWaiters]) {
          if (w.pred(s)) {
            statusWaiters.splice(statusWaiters.indexOf(w), 1);
            w.resolve(s);
          }
        }
        return send(res, 200, { success: true, desired_version: version, ...(opts.heartbeatInterval ? { heartbeat_interval: opts.heartbeatInterval } : {}) });
      }
      if (route === 'GET /api/v0/agent/desired/') {
        desiredCalls++;
        const q: Record<string, unknown> = {};
        for (const [k, v] of url.searchParams) q[k] = /^\d+$/.test(v) ? Number(v) : v;
        if (!checked(DesiredQuery, q)) return;
        const after = q.after as number | undefined;
        const wait = (q.wait as number | undefined) ?? 0;
        if (!swallowPolls && (after === undefined || after !== version || wait === 0)) return send(res, 200, desiredReply());
        const held = { res, timer: null as NodeJS.Timeout | null };
        if (!swallowPolls) {
          held.timer = setTimeout(() => {
            heldPolls = heldPolls.filter((p) => p !== held);
            send(res, 200, desiredReply());
          }, wait * 1000);
        }
        heldPolls.push(held);
        for (const w of pollHeldWaiters.splice(0)) w();
        return;
      }
      const m = /^PUT \/api\/v0\/agent\/logs\/([^/]+)\/$/.exec(route);
      if (m) {
        const b = await body(req);
        if (!checked(LogAnswerBody, b)) return;
        const id = decodeURIComponent(m[1]);
        const answer = logAnswers.get(id);
        if (!answer || !logRequests.has(id)) return fail(res, 404, 'not_found', 'no such log request');
        logRequests.delete(id);
        logAnswers.delete(id);
        bump();
        answer(b as AgentLogAnswer);
        return send(res, 200, { success: true });
      }
      return fail(res, 404, 'not_found', `no route ${route}`);
    })().catch((err) => {
      violations.push(`${req.method} ${req.url}: ${(err as Error).message}`);
      if (!res.headersSent) fail(res, 400, 'bad_request', 'unreadable request');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    apiKey,
    registrations,
    statuses,
    violations,
    get version() {
      return version;
    },
    get machineKey() {
      return machineKey;
    },
    get desiredCalls() {
      return desiredCalls;
    },
    /** Replaces the machine's desired instances (a new version; held polls are answered at once). */
    setDesired(list: DesiredInstanceT[]): void {
      instances = list;
      bump();
    },
    /** Resolves with the first status report (already received or still to come) that satisfies `pred`. */
    waitForStatus(pred: (s: AgentStatusRequest) => boolean): Promise<AgentStatusRequest> {
      const seen = statuses.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => statusWaiters.push({ pred, resolve }));
    },
    /** Only reports from now on. */
    nextStatus(pred: (s: AgentStatusRequest) => boolean): Promise<AgentStatusRequest> {
      return new Promise((resolve) => statusWaiters.push({ pred, resolve }));
    },
    /** A renter's request_logs: resolves with the agent's answer. */
    requestLogs(instanceId: number, tail: number | null = null, filter: string | null = null): Promise<AgentLogAnswer> {
      const request_id = `log_${randomBytes(8).toString('hex')}`;
      const answered = new Promise<AgentLogAnswer>((resolve) => logAnswers.set(request_id, resolve));
      logRequests.set(request_id, { request_id, instance_id: instanceId, tail, filter });
      bump();
      return answered;
    },
    /** Holds every desired-state poll unanswered from now on (true), or answers them again (false). */
    setSwallowPolls(on: boolean): void {
      swallowPolls = on;
      if (!on) flushPolls();
    },
    get heldPolls() {
      return heldPolls.length;
    },
    /** Resolves once a desired-state poll is being held (at once if one is). */
    whenPollHeld(): Promise<void> {
      if (heldPolls.length > 0) return Promise.resolve();
      return new Promise((resolve) => pollHeldWaiters.push(resolve));
    },
    /** The polls held now never get an answer (their connection stays open): a long-poll that died silently. */
    killHeldPolls(): number {
      for (const p of heldPolls) {
        if (p.timer) clearTimeout(p.timer);
        deadPolls.push(p.res);
      }
      const n = heldPolls.length;
      heldPolls = [];
      return n;
    },
    /** Forgets the machine key, as deleting the machine does. */
    revokeMachineKey(): void {
      machineKey = `revoked_${randomBytes(8).toString('hex')}`;
    },
    async close(): Promise<void> {
      for (const p of heldPolls) {
        if (p.timer) clearTimeout(p.timer);
        p.res.destroy();
      }
      heldPolls = [];
      for (const r of deadPolls) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeServer = Awaited<ReturnType<typeof startFakeServer>>;

/** A desired instance with every field, for tests to override. */
export function desiredInstance(over: Partial<DesiredInstanceT> & { instance_id: number }): DesiredInstanceT {
  return {
    state: 'running',
    generation: 1,
    boot: 0,
    image: 'busybox:latest',
    docker_login: null,
    runtype: 'ssh',
    args: null,
    onstart: null,
    env: {},
    ports: [],
    hostname: null,
    ssh_keys: [],
    gpu_indices: [0],
    cpu_share: 0.5,
    memory_share: 0.5,
    disk: 10,
    ...over,
  };
}

/**
 * Shared pieces of the tunnel tests (not a test file itself): a test app listening on a real port with a registered
 * machine, the real agent-side tunnel client against it, and a fake data plane (echo, a byte source, refusals) that
 * stands in for the agent's SSH endpoint.
 */
import assert from 'node:assert/strict';
import { createHash, randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLog } from '../src/agent/agent-log.js';
import { startAgentTunnel, TunnelRefusal, type AgentTunnel, type AgentTunnelOptions, type TunnelHandler } from '../src/agent/agent-tunnel.js';
import type { DialectName } from '../src/platform/db/connect.js';
import type { TunnelStream } from '../src/tunnels/tunnels-contract.js';
import { createTestApp, type TestApp, type TestAppOptions } from './helpers/harness.js';
import { hostWithMachine, type Host } from './agent-server-fixtures.js';

export interface TunnelServer {
  app: TestApp;
  url: string;
  port: number;
}

/**
 * A free port below Linux's ephemeral range (32768-60999), for a server that restarts on the same port: an agent's
 * outgoing connection, retrying meanwhile, can never be given it.
 */
export async function steadyPort(): Promise<number> {
  for (;;) {
    const candidate = 20_000 + randomInt(10_000);
    const s = createServer();
    const free = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false));
      s.listen(candidate, '127.0.0.1', () => resolve(true));
    });
    if (free) {
      await new Promise<void>((resolve) => s.close(() => resolve()));
      return candidate;
    }
  }
}

/** A test app listening on 127.0.0.1 (`port`: a given one, to come back on after a restart). */
export async function listeningApp(dialect: DialectName, options: TestAppOptions & { port?: number } = {}): Promise<TunnelServer> {
  const app = await createTestApp(dialect, options);
  // As main.ts closes a server: held long-polls and their change feed end first (a real agent long-polls this app).
  const close = app.close.bind(app);
  app.close = async () => {
    app.services.instances.hub.close();
    await close();
  };
  await app.app.listen({ host: '127.0.0.1', port: options.port ?? 0 });
  const address = app.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { app, url: `http://127.0.0.1:${port}`, port };
}

export async function machineOn(app: TestApp): Promise<Host> {
  return hostWithMachine(app, { list: false });
}

/** Polls `cond` every 20 ms until it holds (a failed assertion after `ms`). */
export async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export interface FakePlane {
  handler: TunnelHandler;
  /** Each stream the handler was given: its target's authority and source. */
  seen: { target: string; source: string }[];
}

/** Bytes from a seeded generator, `n` of them, as chunks of 1 MiB. */
export function* pseudoRandom(n: number, seed = 1): Generator<Buffer> {
  let x = seed >>> 0 || 1;
  for (let left = n; left > 0; left -= 1 << 20) {
    const b = Buffer.allocUnsafe(Math.min(left, 1 << 20));
    for (let i = 0; i + 4 <= b.length; i += 4) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      b.writeUInt32LE(x >>> 0, i);
    }
    b.fill(7, b.length - (b.length % 4));
    yield b;
  }
}

export function sha256Of(chunks: Iterable<Buffer>): string {
  const h = createHash('sha256');
  for (const c of chunks) h.update(c);
  return h.digest('hex');
}

/** Writes chunks with backpressure, then ends. */
export async function writeAll(stream: Duplex, chunks: Iterable<Buffer>): Promise<void> {
  for (const c of chunks) {
    if (!stream.write(c)) {
      await new Promise<void>((resolve, reject) => {
        const done = (err?: Error) => {
          stream.off('drain', done);
          stream.off('error', done);
          stream.off('close', closed);
          if (err) reject(err);
          else resolve();
        };
        const closed = () => done(new Error('the stream closed while writing'));
        stream.on('drain', done);
        stream.on('error', done);
        stream.on('close', closed);
      });
    }
  }
  stream.end();
}

/** Reads a stream to its end: how many bytes and their SHA-256. */
export function readAll(stream: Duplex): Promise<{ bytes: number; sha256: string; text: string }> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    let bytes = 0;
    let head = '';
    stream.on('data', (d: Buffer) => {
      bytes += d.length;
      h.update(d);
      if (head.length < 4096) head += d.toString('latin1');
    });
    stream.once('end', () => resolve({ bytes, sha256: h.digest('hex'), text: head }));
    stream.once('error', reject);
    stream.once('close', () => reject(new Error(`the stream closed before its end, after ${bytes} bytes`)));
  });
}

/**
 * The fake data plane: `ssh.<id>` echoes (trailers `auth: ok`, `user: root`, `bytes`), `tcp.<id>:<n>` sends n MiB
 * of pseudoRandom then ends, `agent-ssh.<id>` is refused 404 with a reason, `rsync.<id>` 502.
 */
export function fakePlane(): FakePlane {
  const seen: FakePlane['seen'] = [];
  const handler: TunnelHandler = async (target, stream, info): Promise<Record<string, string>> => {
    seen.push({ target: `${target.kind}.${target.instanceId}`, source: info.source });
    if (target.kind === 'agent-ssh') throw new TunnelRefusal(404, `instance ${target.instanceId} is not on this machine`);
    if (target.kind === 'rsync') throw new TunnelRefusal(502, `instance ${target.instanceId}'s container is not running`);
    if (target.kind === 'tcp') {
      stream.resume();
      await writeAll(stream, pseudoRandom(target.port * (1 << 20), target.port));
      return { sent: String(target.port * (1 << 20)) };
    }
    let bytes = 0;
    stream.on('data', (d: Buffer) => (bytes += d.length));
    stream.pipe(stream);
    await new Promise<void>((resolve) => stream.once('finish', () => resolve()));
    return { auth: 'ok', user: 'root', bytes: String(bytes) };
  };
  return { handler, seen };
}

/** The real agent tunnel client, with short reconnect waits, connected once `ready` settles. */
export function agentTunnel(url: string, machineKey: string, handler: TunnelHandler, over: Partial<AgentTunnelOptions> = {}): AgentTunnel & { connects: number } {
  const counter = { connects: 0 };
  const t = startAgentTunnel({
    url, machineKey, handler, log: silentLog, backoff: { firstMs: 100, maxMs: 400 }, ...over,
    onConnected: () => {
      counter.connects++;
      over.onConnected?.();
    },
  });
  return { connected: t.connected, stop: t.stop, get connects() { return counter.connects; } };
}

/** A stream's whole round trip: writes `chunks`, reads what comes back, and the trailers. */
export async function roundTrip(s: TunnelStream, chunks: Iterable<Buffer>) {
  const [, back, end] = await Promise.all([writeAll(s.stream, chunks), readAll(s.stream), s.end]);
  return { back, end };
}

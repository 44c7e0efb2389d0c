// What test/ports-e2e.test.ts and bench/port-proxy.bench.ts share: a real `gpuplane serve` and `gpuplane agent` with
// Docker, an instance of the sshd image (it has python3) running two servers written with python's standard library,
// and requests to the instance's port hosts sent to the server's own address with the port's Host header.
// - port 8000: HTTP/1.1 with keep-alive (ThreadingHTTPServer): `GET /` says hello, `GET /big?mb=N` streams N MiB of a
//   known pattern, `POST /upload` answers the body's length and SHA-256;
// - port 8001: a WebSocket echo server (RFC 6455 handshake and frames, text and binary).
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { sshdImage } from './helpers/sshd-image.js';
import { freePort } from './helpers/openssh.js';

export const APP_SERVER = String.raw`
import hashlib, socketserver, threading, base64, struct
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
PATTERN = bytes(range(256)) * 4096  # 1 MiB
class H(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith('/big'):
            mb = int(self.path.split('mb=')[1])
            self.send_response(200)
            self.send_header('Content-Type', 'application/octet-stream')
            self.send_header('Content-Length', str(mb * len(PATTERN)))
            self.end_headers()
            for _ in range(mb): self.wfile.write(PATTERN)
            return
        body = ('hello from the container ' + self.path + ' cookie=' + str(self.headers.get('Cookie')) + ' xff=' + str(self.headers.get('X-Forwarded-For'))).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get('Content-Length', '0'))
        h = hashlib.sha256(); left = n
        while left > 0:
            c = self.rfile.read(min(left, 1 << 16))
            if not c: break
            h.update(c); left -= len(c)
        body = ('{"bytes": %d, "sha256": "%s"}' % (n - left, h.hexdigest())).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class WS(socketserver.StreamRequestHandler):
    def handle(self):
        head = b''
        while b'\r\n\r\n' not in head:
            c = self.request.recv(4096)
            if not c: return
            head += c
        key = [l.split(b':', 1)[1].strip() for l in head.split(b'\r\n') if l.lower().startswith(b'sec-websocket-key:')][0]
        accept = base64.b64encode(hashlib.sha1(key + b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest())
        path = head.split(b' ')[1]
        self.request.sendall(b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + b'\r\n\r\n')
        self.send(1, b'hello ' + path)
        while True:
            h = self.rfile.read(2)
            if len(h) < 2: return
            op, n = h[0] & 15, h[1] & 127
            if n == 126: n = struct.unpack('>H', self.rfile.read(2))[0]
            elif n == 127: n = struct.unpack('>Q', self.rfile.read(8))[0]
            mask = self.rfile.read(4) if h[1] & 128 else b'\0\0\0\0'
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                self.send(8, data[:2]); return
            if op in (1, 2): self.send(op, b'echo ' + data if op == 1 else data)
    def send(self, op, data):
        n = len(data)
        h = bytes([128 | op]) + (bytes([n]) if n < 126 else bytes([126]) + struct.pack('>H', n) if n < 65536 else bytes([127]) + struct.pack('>Q', n))
        self.request.sendall(h + data)
class TS(socketserver.ThreadingTCPServer):
    allow_reuse_address = True; daemon_threads = True
ThreadingHTTPServer.daemon_threads = True
threading.Thread(target=TS(('0.0.0.0', 8001), WS).serve_forever, daemon=True).start()
ThreadingHTTPServer(('0.0.0.0', 8000), H).serve_forever()
`;

/** The SHA-256 of `GET /big?mb=N`'s body. */
export function patternSha(mb: number): string {
  const one = Buffer.alloc(1 << 20);
  for (let i = 0; i < one.length; i++) one[i] = i & 255;
  const h = createHash('sha256');
  for (let i = 0; i < mb; i++) h.update(one);
  return h.digest('hex');
}

export interface PortsWorld {
  server: Served;
  agent: AgentProcess;
  docker: Docker;
  serverPort: number;
  machineId: number;
  renterKey: string;
  hostKey: string;
  ownerKey: string;
  image: string;
  dir: string;
  context(): string;
  within<T>(what: string, p: Promise<T>, ms?: number): Promise<T>;
  api(method: string, path: string, key: string | null, body?: unknown): ReturnType<typeof call>;
  close(): Promise<void>;
}

/** Starts the server and an agent with Docker; the machine is listed. `ports`: the agent's direct port range. */
export async function startPortsWorld(name: string, ports: { start: number; end: number }, serverEnv: Record<string, string> = {}): Promise<PortsWorld> {
  const docker = new Docker();
  const dir = mkdtempSync(join(tmpdir(), `gpuplane-${name}-`));
  const dbFile = join(dir, 'gpuplane.db');
  const ownerKey = `gpk_${name.replace(/[^a-z0-9]/g, '_')}_owner_key_0123456789`;
  const made = sshdImage();
  await prepareAgentRun(docker, dir, dbFile, 600_000_000 + Math.floor(Math.random() * 1_000_000));
  writeFileSync(join(dir, 'hardware.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(dir, 'hardware.json'), 'utf8')), num_gpus: 4 }));
  const serverPort = await freePort();
  const server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: ownerKey, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30', ...serverEnv,
  }, { port: serverPort });
  let agent: AgentProcess | undefined;
  let machineId = 0;
  const context = () => `--- agent\n${agent?.output().slice(-4000)}\n--- server\n${server.output().slice(-4000)}`;
  const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
  const api = (method: string, path: string, key: string | null, body?: unknown) => call(server.url, method, path, key, body);
  const image = await made;
  const host = await api('POST', '/_emu/users', ownerKey, { email: `${name}-host@example.com` });
  const renter = await api('POST', '/_emu/users', ownerKey, { email: `${name}-renter@example.com` });
  agent = startAgent({ url: server.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports, apiKey: host.body.api_key });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', host.body.api_key, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  if (listed.status !== 200) throw new Error(`listing failed: ${JSON.stringify(listed.body)}`);
  const a = agent;
  return {
    server, agent: a, docker, serverPort, machineId, renterKey: renter.body.api_key, hostKey: host.body.api_key, ownerKey, image, dir, context, within, api,
    async close() {
      if (a.child.exitCode === null) {
        a.child.kill('SIGKILL');
        await a.exited;
      }
      for (const c of await docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } })) {
        await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
      }
      for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Rents the app instance (ports 8000 and 8001 published) and waits for it to run: its id and instance object. */
export async function rentApp(w: PortsWorld): Promise<{ id: number; view: Record<string, any> }> {
  const onstart = [
    // Compressed: onstart holds at most 4048 characters.
    `echo ${deflateSync(APP_SERVER).toString('base64')} | base64 -d | python3 -c 'import sys,zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))' > /root/app.py`,
    '(python3 /root/app.py >/root/app.log 2>&1 &)',
  ].join('\n');
  const rented = await w.api('PUT', `/api/v0/asks/${w.machineId * 100 + 1}/`, w.renterKey, {
    image: w.image, runtype: 'ssh_proxy', onstart, env: { '-p 8000:8000': '1', '-p 8001:8001': '1' },
  });
  if (rented.status !== 200) throw new Error(`rent failed: ${JSON.stringify(rented.body)}`);
  const id: number = rented.body.new_contract;
  const view = await w.within(`instance ${id} running`, untilStatus(w.server.url, w.renterKey, id, 'running'), 180_000);
  return { id, view };
}

export interface Got {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A request to `127.0.0.1:<port>` with the given Host header; the body is collected (or hashed when `hash`). */
export function hostRequest(port: number, hostHeader: string, path: string, o: { method?: string; headers?: Record<string, string>; body?: Buffer; hash?: boolean } = {}): Promise<Got & { sha256?: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: o.method ?? 'GET', path, headers: { host: hostHeader, ...o.headers } }, (res) => {
      const chunks: Buffer[] = [];
      const h = createHash('sha256');
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (o.hash) h.update(c);
        else chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), bytes, sha256: o.hash ? h.digest('hex') : undefined }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** Waits until the app answers through the server (onstart may still be starting it): the first 200. */
export async function untilAppAnswers(w: PortsWorld, hostHeader: string, headers: Record<string, string>, ms = 60_000): Promise<Got> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await hostRequest(w.serverPort, hostHeader, '/', { headers });
    if (r.status === 200 || Date.now() > until) return r;
    await new Promise((res) => setTimeout(res, 300));
  }
}

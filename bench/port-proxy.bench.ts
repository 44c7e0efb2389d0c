/**
 * Issue 32 "Done when": an instance's HTTP port through the server (its port URL: the server's HTTP port with the
 * port's Host header, then the host agent's tunnel) against the same container port reached directly on its published
 * host port, in the same run, with real processes (`gpuplane serve`, `gpuplane agent`, Docker; test/ports-fixture.ts):
 * - requests/s of `GET /` with wrk (one thread, `--connections`, keep-alive; the port token in a header), alternating
 *   rounds, medians: target >= 0.5x direct;
 * - a 200 MB download (`GET /big?mb=200`), MB/s of each in alternating rounds, medians: target >= 0.5x direct.
 * The app is python's ThreadingHTTPServer in the sshd test image (HTTP/1.1, keep-alive): the same app both ways, so the
 * ratio is what the server and the tunnel add, on this machine's cores shared by all three processes.
 */
import { request as httpRequest } from 'node:http';
import { defineBench, median, type BenchContext, type Figure } from './lib.js';
import { ensureWrk, runWrk } from './wrk.js';
import { rentApp, startPortsWorld, untilAppAnswers } from '../test/ports-fixture.js';

const PORTS = { start: 47500, end: 47599 };
const DOWNLOAD_MB = 200;

/** Downloads `path` (reading and dropping the body): MB/s. */
function download(port: number, host: string, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host, ...headers } }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => {
        if (res.statusCode !== 200 || bytes !== DOWNLOAD_MB << 20) return reject(new Error(`download: ${res.statusCode}, ${bytes} bytes`));
        resolve(bytes / (1 << 20) / ((performance.now() - started) / 1000));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

async function run(ctx: BenchContext): Promise<Figure[]> {
  ensureWrk();
  const w = await startPortsWorld('port-proxy-bench', PORTS);
  try {
    const { id, view } = await rentApp(w);
    const token = (await w.api('POST', `/api/v0/instances/${id}/ports/8000/token/`, w.renterKey)).body.token as string;
    type Side = { port: number; host: string; headers: Record<string, string> };
    const through: Side = { port: w.serverPort, host: `${id}-8000.localhost:${w.serverPort}`, headers: { 'x-gpuplane-port-token': token } };
    const hostPort = Number(view.ports['8000/tcp'][0].HostPort);
    const direct: Side = { port: hostPort, host: `127.0.0.1:${hostPort}`, headers: {} };
    const first = await untilAppAnswers(w, through.host, through.headers, 90_000);
    if (first.status !== 200) throw new Error(`the app did not answer through the server: ${first.status} ${first.body.toString()}`);
    ctx.log(`instance ${id}: through http://${through.host}/ vs direct http://127.0.0.1:${hostPort}/`);

    const wrk = (t: Side) => runWrk({
      url: `http://127.0.0.1:${t.port}/`, headers: { Host: t.host, ...t.headers }, connections: ctx.connections, threads: 1, durationS: ctx.durationS, timeoutS: 10,
    });
    // Warm-up of both (the pool's streams, the JIT).
    await wrk(through);
    await wrk(direct);
    const rps = { through: [] as number[], direct: [] as number[] };
    const mbs = { through: [] as number[], direct: [] as number[] };
    for (let round = 0; round < ctx.rounds; round++) {
      for (const [name, t] of [['direct', direct], ['through', through]] as const) {
        const r = await wrk(t);
        if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors of ${r.requests}`);
        rps[name].push(r.rps);
        mbs[name].push(await download(t.port, t.host, `/big?mb=${DOWNLOAD_MB}`, t.headers));
        ctx.log(`round ${round + 1} ${name}: ${Math.round(r.rps)} req/s (p50 ${r.p50Ms.toFixed(2)} ms), ${DOWNLOAD_MB} MB at ${Math.round(mbs[name].at(-1)!)} MB/s`);
      }
    }
    const r2 = (x: number) => Math.round(x * 100) / 100;
    return [
      { name: 'GET / direct to the container port', value: Math.round(median(rps.direct)), unit: 'req/s' },
      { name: 'GET / through the server (port URL, tunnel)', value: Math.round(median(rps.through)), unit: 'req/s' },
      { name: 'requests/s through / direct', value: r2(median(rps.through) / median(rps.direct)), unit: 'x', target: { op: '>=', value: 0.5 } },
      { name: `${DOWNLOAD_MB} MB download direct`, value: Math.round(median(mbs.direct)), unit: 'MB/s' },
      { name: `${DOWNLOAD_MB} MB download through the server`, value: Math.round(median(mbs.through)), unit: 'MB/s' },
      { name: 'download through / direct', value: r2(median(mbs.through) / median(mbs.direct)), unit: 'x', target: { op: '>=', value: 0.5 } },
    ];
  } finally {
    await w.close();
  }
}

export default defineBench({
  name: 'port-proxy',
  description: `an instance's HTTP port through the server vs direct to the same container port: wrk requests/s, a ${DOWNLOAD_MB} MB download`,
  run,
});

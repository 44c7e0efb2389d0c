// The agent tunnel's throughput (issue 31; src/tunnels/, src/agent/agent-tunnel.ts) against a plain TCP socket on
// loopback, in one run: 200 MB up (renter → container, as an scp upload) and 200 MB down, through the same TCP hops a
// gateway connection takes (client → a TCP relay in the server that opens a tunnel stream → the agent process → a
// local sink), against the client straight to the sink. No SSH: this is the tunnel's own cost, the figure that bounds
// scp through the gateway (bench/ssh-gateway.bench.ts measures scp itself). Size: GPUPLANE_BENCH_TUNNEL_MB (200);
// rounds alternate direct and tunnel (--rounds), medians reported.
import { spawn } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { splice } from '../src/tunnels/tunnels-streams.js';
import { createTestApp } from '../test/helpers/harness.js';
import { hostWithMachine } from '../test/agent-server-fixtures.js';
import { cpuMs, defineBench, ROOT, type Figure } from './lib.js';

const SIZE_MB = Number(process.env.GPUPLANE_BENCH_TUNNEL_MB ?? 200);
// No target here: issue 31 judges scp through the gateway against direct SSH (bench/ssh-gateway.bench.ts), where SSH's
// own cipher work is in both paths. Against bare loopback TCP, which costs almost nothing, the tunnel's three TCP legs
// and HTTP/2 framing show as they are; its CPU per MB is the figure that says how much room it leaves SSH.
const CHUNK = Buffer.alloc(1 << 20, 0xa5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One transfer through `port`: MB/s (MB = 10^6 bytes). */
function transfer(port: number, direction: 'up' | 'down', bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const s = connect(port, '127.0.0.1');
    s.setNoDelay(true);
    s.on('error', reject);
    let got = 0;
    let reply = '';
    s.on('data', (d: Buffer) => {
      if (direction === 'down') got += d.length;
      else reply += d.toString();
    });
    s.on('end', () => {
      const done = direction === 'down' ? got : Number(reply.trim());
      if (done !== bytes) return reject(new Error(`${direction}: ${done} of ${bytes} bytes arrived`));
      resolve(bytes / 1e6 / ((performance.now() - t0) / 1000));
      s.end();
    });
    if (direction === 'down') return void s.write(`D ${bytes}\n`);
    s.write('U\n');
    let left = bytes;
    const pump = () => {
      while (left > 0) {
        const c = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
        left -= c.length;
        if (!s.write(c)) return void s.once('drain', pump);
      }
      s.end();
    };
    pump();
  });
}

export default defineBench({
  name: 'tunnel',
  description: `${SIZE_MB} MB up and down through the agent tunnel (server relay → reverse HTTP/2 → agent process → sink) vs. plain TCP to the sink, loopback`,
  async run(ctx) {
    const app = await createTestApp('sqlite');
    await app.app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.app.server.address() as { port: number }).port}`;
    const host = await hostWithMachine(app, { list: false });
    const agent = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'tunnel-agent.ts'), url, host.machineKey], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let relay: Server | undefined;
    try {
      const sinkPort = await new Promise<number>((resolve, reject) => {
        agent.once('exit', (code) => reject(new Error(`the agent process exited (${code})`)));
        createInterface({ input: agent.stdout! }).on('line', (line) => {
          const m = /^READY (\d+)$/.exec(line);
          if (m) resolve(Number(m[1]));
        });
      });
      relay = createServer({ allowHalfOpen: true }, (socket) => {
        socket.setNoDelay(true);
        app.services.tunnels.api.open(host.machineId, { kind: 'tcp', instanceId: 1, port: sinkPort }, { source: `${socket.remoteAddress}:${socket.remotePort}` })
          .then((t) => splice(socket, t.stream), () => socket.destroy());
      });
      await new Promise<void>((resolve) => relay!.listen(0, '127.0.0.1', resolve));
      const relayPort = (relay.address() as { port: number }).port;
      const bytes = SIZE_MB * 1e6;
      const figures: Figure[] = [];
      for (const direction of ['up', 'down'] as const) {
        const direct: number[] = [];
        const tunnel: number[] = [];
        const directCpu: number[] = [];
        const tunnelCpu: number[] = [];
        // CPU of both processes (this one: the client, the relay and the server's tunnel end; the agent's: its tunnel
        // end and the sink) per MB: less swayed than the rate by other load on a shared machine.
        const cpu = () => process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000 + cpuMs(agent.pid);
        const timed = async (port: number, into: number[], cpuInto: number[]) => {
          const c0 = cpu();
          into.push(await transfer(port, direction, bytes));
          cpuInto.push((cpu() - c0) / (bytes / 1e6));
        };
        await transfer(relayPort, direction, 8e6); // warm-up
        for (let r = 0; r < ctx.rounds; r++) {
          await timed(sinkPort, direct, directCpu);
          await timed(relayPort, tunnel, tunnelCpu);
          ctx.log(`  ${direction} round ${r + 1}: direct ${direct.at(-1)!.toFixed(0)} MB/s (${directCpu.at(-1)!.toFixed(2)} CPU ms/MB), `
            + `tunnel ${tunnel.at(-1)!.toFixed(0)} MB/s (${tunnelCpu.at(-1)!.toFixed(2)} CPU ms/MB)`);
        }
        const d = median(direct);
        const t = median(tunnel);
        figures.push(
          { name: `${SIZE_MB} MB ${direction}, plain TCP`, value: Math.round(d), unit: 'MB/s' },
          { name: `${SIZE_MB} MB ${direction}, through the tunnel`, value: Math.round(t), unit: 'MB/s' },
          { name: `${SIZE_MB} MB ${direction}, tunnel / plain TCP`, value: Math.round((t / d) * 100) / 100, unit: '×' },
          { name: `${SIZE_MB} MB ${direction}, CPU per MB, plain TCP`, value: Math.round(median(directCpu) * 100) / 100, unit: 'ms' },
          { name: `${SIZE_MB} MB ${direction}, CPU per MB, tunnel`, value: Math.round(median(tunnelCpu) * 100) / 100, unit: 'ms' },
        );
      }
      return figures;
    } finally {
      relay?.close();
      agent.kill();
      await app.close();
    }
  },
});

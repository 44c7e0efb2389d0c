/**
 * The agent's half of bench/tunnel.bench.ts, in a process of its own as on a real host: the real agent tunnel client
 * (src/agent/agent-tunnel.ts) whose handler splices each `tcp` stream to a local byte sink, and the sink. Arguments:
 * the server URL and the machine key. Prints `READY <sink port>` once the tunnel is up.
 * The sink's protocol, per connection: `U\n` then bytes until the end (it answers the count), or `D <n>\n` (it sends
 * n bytes, then ends).
 */
import { createServer, connect, type Socket } from 'node:net';
import { silentLog } from '../src/agent/agent-log.js';
import { startAgentTunnel } from '../src/agent/agent-tunnel.js';

const [url, machineKey] = process.argv.slice(2);
const CHUNK = Buffer.alloc(1 << 20, 0x5a);

function serveSink(socket: Socket): void {
  let head = '';
  let count = 0;
  let mode: 'U' | 'D' | undefined;
  const onData = (d: Buffer) => {
    if (mode === 'U') {
      count += d.length;
      return;
    }
    head += d.toString('latin1');
    const nl = head.indexOf('\n');
    if (nl < 0) return;
    const line = head.slice(0, nl);
    const rest = Buffer.from(head.slice(nl + 1), 'latin1');
    if (line === 'U') {
      mode = 'U';
      count = rest.length;
    } else {
      mode = 'D';
      let left = Number(line.slice(2));
      const pump = () => {
        while (left > 0) {
          const c = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
          left -= c.length;
          if (!socket.write(c)) return void socket.once('drain', pump);
        }
        socket.end();
      };
      pump();
    }
  };
  socket.on('data', onData);
  socket.on('end', () => {
    if (mode === 'U') socket.end(`${count}\n`);
  });
  socket.on('error', () => undefined);
}

const sink = createServer({ allowHalfOpen: true }, serveSink);
sink.listen(0, '127.0.0.1', () => {
  const port = (sink.address() as { port: number }).port;
  let announced = false;
  startAgentTunnel({
    url, machineKey, log: silentLog,
    handler: (target, stream) => new Promise((resolve) => {
      if (target.kind !== 'tcp') throw new Error('the bench serves tcp targets only');
      const s = connect({ port: target.port, host: '127.0.0.1', allowHalfOpen: true });
      s.setNoDelay(true);
      stream.pipe(s);
      s.pipe(stream);
      s.on('error', () => stream.destroy());
      stream.on('error', () => s.destroy());
      stream.on('finish', () => resolve({}));
    }),
    onConnected: () => {
      if (!announced) process.stdout.write(`READY ${port}\n`);
      announced = true;
    },
  });
});

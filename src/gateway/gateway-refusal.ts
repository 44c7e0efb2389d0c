/**
 * Why the gateway will not pass a connection on, said as SSH (README "Connecting to an instance"): a renter's `ssh`
 * gets a real SSH conversation that shows a banner (OpenSSH prints it on stderr) and ends with a disconnect whose
 * reason is the same sentence, instead of a reset or a hang. An `ssh2` Server with the gateway's host key, fed the
 * accepted socket (no listening port of its own); it never authenticates anyone: the first login attempt is answered
 * with the disconnect.
 *
 * The renter's client sees the gateway's host key here, not the instance's; a later connection that reaches the
 * instance shows the instance's key. The README says so (known_hosts).
 */
import type { Socket } from 'node:net';
import { createRequire } from 'node:module';
import ssh2 from 'ssh2';

/** How long a refusal may take (a client that stalls in the handshake is cut then). */
const REFUSAL_TIMEOUT_MS = 20_000;
/** SSH_DISCONNECT_SERVICE_NOT_AVAILABLE (RFC 4253 §11.1): nothing to serve at this port now. */
const SERVICE_NOT_AVAILABLE = 7;
/** SSH_MSG_DISCONNECT. */
const MSG_DISCONNECT = 1;

interface PacketWriter {
  allocStartKEX: number;
  alloc(len: number, force?: boolean): Buffer;
  finalize(packet: Buffer, force?: boolean): Buffer;
}
interface ProtocolInternals {
  _packetRW?: { write: PacketWriter };
}

/**
 * ssh2's own disconnect sends an empty description; OpenSSH prints the description (`Received disconnect from …:
 * REASON`), so it is written here with ssh2's packet writer, as its `disconnect` writes the message. Should a later
 * ssh2 change those internals, its plain disconnect is sent instead (the banner still carries the sentence).
 */
const sendPacket: ((proto: unknown, packet: Buffer, bypass: boolean) => void) | undefined = (() => {
  try {
    return (createRequire(import.meta.url)('ssh2/lib/protocol/utils.js') as { sendPacket?: (p: unknown, b: Buffer, x: boolean) => void }).sendPacket;
  } catch {
    return undefined;
  }
})();

function disconnectWithReason(client: ssh2.Connection, reason: string): boolean {
  const proto = (client as unknown as { _protocol?: ProtocolInternals })._protocol;
  const writer = proto?._packetRW?.write;
  if (!sendPacket || !writer || typeof writer.alloc !== 'function') return false;
  const text = Buffer.from(reason.slice(0, 400), 'utf8');
  let p = writer.allocStartKEX;
  const packet = writer.alloc(1 + 4 + 4 + text.length + 4, true);
  packet[p] = MSG_DISCONNECT;
  packet.writeUInt32BE(SERVICE_NOT_AVAILABLE, ++p);
  packet.writeUInt32BE(text.length, (p += 4));
  text.copy(packet, (p += 4));
  packet.writeUInt32BE(0, p + text.length); // empty language tag
  sendPacket(proto, writer.finalize(packet, true), true);
  return true;
}

export interface Refusal {
  /** One sentence: the disconnect's reason and the banner's first line. */
  reason: string;
  /** More lines for the banner (what to do about it). */
  detail?: string;
}

/** Says `refusal` to the SSH client on `socket` and closes it; resolves once the socket is closed. */
export function refuseAsSsh(socket: Socket, refusal: Refusal, hostKey: string): Promise<void> {
  if (socket.destroyed) return Promise.resolve(); // gone while the instance was read
  return new Promise((resolve) => {
    const banner = [`gpuplane: ${refusal.reason}`, ...(refusal.detail ? [refusal.detail] : [])].join('\r\n');
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
    const timer = setTimeout(finish, REFUSAL_TIMEOUT_MS);
    socket.once('close', finish);
    socket.on('error', () => finish());
    const server = new ssh2.Server({ hostKeys: [hostKey], banner, ident: 'gpuplane-gateway' }, (client) => {
      client.on('error', () => finish());
      client.on('authentication', () => {
        // The banner went out with the service accept, before this first attempt: say the reason and hang up.
        if (!disconnectWithReason(client, refusal.reason)) client.end();
        else socket.end();
        setTimeout(finish, 1000).unref();
      });
    });
    server.on('error', () => finish());
    server.injectSocket(socket);
  });
}

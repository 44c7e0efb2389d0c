/**
 * How many connections the HTTP server holds, and for how long a request may take to arrive (issue 29 item 18):
 * without these, about 21,000 held half-sent requests reached the process's open-file limit and every new connection
 * was reset. Three bounds, each a setting (config.ts):
 * - a request's headers and its whole body arrive within their timeouts, or it is answered 408 and closed (Node's
 *   `headersTimeout` and `requestTimeout`; they bound receiving only, so an event stream, a long-poll or a wait, whose
 *   reply takes long, is never cut);
 * - one client address holds at most so many connections (an IPv6 address counts by its /64: a client has a whole
 *   /64 to choose from); past it, its new ones are closed as they are accepted. Exempt addresses (loopback, a reverse
 *   proxy) are not capped here: a proxy's clients all arrive from its address, and it caps them itself;
 * - the server holds at most so many in all (Node's `maxConnections`), below the open-file limit, so that the
 *   database and the files the server opens still get descriptors when the cap is reached.
 * The count is of sockets, not requests: a kept-alive connection counts once however many requests it carries.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { BlockList, isIPv4, type Socket } from 'node:net';

/** The share of the open-file limit the connections may take when GPUPLANE_MAX_CONNECTIONS is unset. */
const CONNECTIONS_SHARE_OF_FILE_LIMIT = 0.8;
/** The most connections the default allows, whatever the file limit (about 10 KB of memory each when idle). */
const MAX_DEFAULT_CONNECTIONS = 65_536;
/** The default where the open-file limit cannot be read (not Linux). */
const DEFAULT_CONNECTIONS_UNKNOWN_LIMIT = 8192;
/**
 * Node checks the timeouts on a timer, not per connection: checked four times a timeout, a request is cut at most a
 * quarter of it late (Node's own default checks every 30 s).
 */
const TIMEOUT_CHECKS_PER_PERIOD = 4;

export interface ConnectionLimits {
  /** Unset: from the open-file limit (`defaultMaxConnections`). */
  maxConnections: number | undefined;
  /** 0: no per-address cap. */
  maxConnectionsPerSource: number;
  /** Addresses and CIDR blocks (`10.0.0.0/8`) without the per-address cap. */
  connectionLimitExempt: string[];
  headersTimeout: number;
  requestTimeout: number;
}

/** Fastify's options for the timeouts: Fastify sets `requestTimeout` on the server itself (its own default, 0, is none). */
export function serverTimeouts(limits: Pick<ConnectionLimits, 'headersTimeout' | 'requestTimeout'>) {
  const headersTimeout = limits.headersTimeout * 1000;
  const requestTimeout = limits.requestTimeout * 1000;
  return {
    requestTimeout,
    http: { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.ceil(headersTimeout / TIMEOUT_CHECKS_PER_PERIOD) },
  };
}

/** The soft open-file limit of this process (Node raises it to the hard limit at start), or undefined off Linux. */
export function openFileLimit(readLimits: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number | undefined {
  try {
    const soft = /^Max open files\s+(\d+)/m.exec(readLimits())?.[1];
    return soft === undefined ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/** The total cap when none is set: a share of the open-file limit, leaving the rest to the database and files. */
export function defaultMaxConnections(fileLimit: number | undefined): number {
  if (fileLimit === undefined) return DEFAULT_CONNECTIONS_UNKNOWN_LIMIT;
  return Math.max(1, Math.min(MAX_DEFAULT_CONNECTIONS, Math.floor(fileLimit * CONNECTIONS_SHARE_OF_FILE_LIMIT)));
}

/** `::ffff:10.0.0.7` (an IPv4 client of a dual-stack listener) is `10.0.0.7`, so that both forms count and match as one. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address;
}

/** The groups of an IPv6 address, `::` expanded (an embedded IPv4 tail counts as two; only the first four are used). */
function ipv6Groups(address: string): string[] {
  const bare = address.split('%')[0].toLowerCase();
  const [head, tail] = bare.includes('::') ? bare.split('::') : [bare, undefined];
  const front = head ? head.split(':') : [];
  const back = tail ? tail.split(':') : [];
  const width = (groups: string[]) => groups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const middle = tail === undefined ? [] : Array<string>(8 - width(front) - width(back)).fill('0');
  return [...front, ...middle, ...back].map((g) => (g.includes('.') ? g : parseInt(g, 16).toString(16)));
}

/** What the per-address cap counts by: an IPv4 address itself, an IPv6 address by its /64. */
export function sourceKey(address: string): string {
  const a = unmapped(address);
  return isIPv4(a) ? a : `${ipv6Groups(a).slice(0, 4).join(':')}::/64`;
}

function blockList(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const family = isIPv4(address) ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}

export interface ConnectionCounts {
  /** Open connections counted against `key`'s cap (tests; `sourceKey` of an address). */
  openFrom(key: string): number;
}

/**
 * Sets the total cap on `server` and counts each accepted socket against its address's cap, closing those past it.
 * `warn` is called once when an address reaches its cap (again only after it fell below), and once when the total
 * cap first turns connections away: a flood writes two lines, not one per socket.
 */
export function limitConnections(server: Server, limits: ConnectionLimits, warn: (fields: Record<string, unknown>, msg: string) => void): ConnectionCounts {
  const max = limits.maxConnections ?? defaultMaxConnections(openFileLimit());
  const perSource = limits.maxConnectionsPerSource;
  server.maxConnections = max;
  const exempt = blockList(limits.connectionLimitExempt);
  const open = new Map<string, number>();
  const warned = new Set<string>();
  let total = 0;
  let droppedWarned = false;

  server.on('drop', () => {
    if (droppedWarned) return;
    droppedWarned = true;
    warn({ max }, `the server holds ${max} connections (GPUPLANE_MAX_CONNECTIONS): new ones are closed until some end`);
  });

  server.on('connection', (socket: Socket) => {
    const remote = socket.remoteAddress;
    // Gone before it was seen (reset at once): nothing to count.
    if (remote === undefined) return void socket.destroy();
    total++;
    const address = unmapped(remote);
    const capped = perSource > 0 && !exempt.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
    const key = capped ? sourceKey(address) : '';
    const held = capped ? (open.get(key) ?? 0) : 0;
    const refused = capped && held >= perSource;
    if (capped && !refused) open.set(key, held + 1);
    socket.once('close', () => {
      total--;
      if (total < max) droppedWarned = false;
      if (!capped || refused) return;
      const left = open.get(key)! - 1;
      if (left) open.set(key, left);
      else open.delete(key);
      warned.delete(key);
    });
    if (!refused) return;
    if (!warned.has(key)) {
      warned.add(key);
      warn({ source: key, max: perSource }, `connections from ${key} reached GPUPLANE_MAX_CONNECTIONS_PER_SOURCE (${perSource}): its new ones are closed until some end`);
    }
    // Closed before a byte is read: a refused socket costs the server as little as it can.
    socket.destroy();
  });

  return { openFrom: (key) => open.get(key) ?? 0 };
}

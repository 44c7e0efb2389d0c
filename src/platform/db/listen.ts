/**
 * PostgreSQL `LISTEN` on one dedicated connection (a pooled one would be handed to other queries). Notifications are
 * delivered at their transaction's commit. The connection is re-made when it drops, with a growing pause; since
 * notifications sent meanwhile are lost, `onGap` is called once it listens again, so the caller re-reads what it
 * watches.
 */
import pg from 'pg';

export interface Listener {
  close(): Promise<void>;
}

export interface ListenOptions {
  connectionString: string;
  /** Passed to the connection as `options` (the schema's search_path). */
  options?: string;
  channel: string;
  onPayload: (payload: string) => void;
  /** Notifications may have been missed (the connection dropped and is back). */
  onGap: () => void;
  warn: (err: unknown) => void;
}

// Doubling without jitter, unlike the clients' sdk/backoff.ts: only the server's own few processes reconnect here,
// not a fleet, and the platform imports nothing outside itself.
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5000;

export async function listen(o: ListenOptions): Promise<Listener> {
  let closed = false;
  let client: pg.Client | null = null;
  let retryMs = RETRY_FIRST_MS;
  let timer: NodeJS.Timeout | null = null;

  async function connect(): Promise<void> {
    const c = new pg.Client({ connectionString: o.connectionString, ...(o.options ? { options: o.options } : {}) });
    c.on('notification', (n) => {
      if (n.channel === o.channel && n.payload !== undefined) o.onPayload(n.payload);
    });
    c.on('error', (err) => {
      o.warn(err);
      drop(c);
    });
    c.on('end', () => drop(c));
    await c.connect();
    await c.query(`LISTEN "${o.channel}"`);
    client = c;
    retryMs = RETRY_FIRST_MS;
  }

  function drop(c: pg.Client): void {
    if (client !== c) return;
    client = null;
    c.end().catch(() => undefined);
    if (!closed) schedule();
  }

  function schedule(): void {
    timer = setTimeout(() => {
      timer = null;
      connect().then(
        () => o.onGap(),
        (err) => {
          o.warn(err);
          retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
          if (!closed) schedule();
        },
      );
    }, retryMs);
    timer.unref();
  }

  await connect();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}

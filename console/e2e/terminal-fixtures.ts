/**
 * The terminal's browser test (terminal.spec.ts) needs more than the other specs' server (fixtures.ts: emulator mode,
 * simulated machines only): a real host with a running container. This overrides the `server` fixture with
 * test/helpers/terminal-host.ts's — `gpuplane serve` with the real clock and SQLite in a file, `gpuplane agent` with
 * Docker and its tunnel, a renter with a password whose busybox instance runs — and adds it as `host`. Docker must
 * be there: without it the spec fails, never skips.
 */
import { test as base, expect, type Server } from './fixtures.js';

/** What the spec uses of test/helpers/terminal-host.ts's TerminalHost. */
export interface TerminalHost {
  url: string;
  ownerKey: string;
  renter: { email: string; password: string; key: string };
  instanceId: number;
  api(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

/**
 * Loaded when the fixture runs, not imported: a static import would bring the whole server (test/helpers reach the
 * app) under the console's own, stricter type-check.
 */
const HOST_MODULE = '../../test/helpers/terminal-host.js';
async function startTerminalHost(o: { ports: { start: number; end: number }; idBase: number }): Promise<TerminalHost> {
  const m = (await import(HOST_MODULE)) as { startTerminalHost(o: { ports: { start: number; end: number }; idBase: number }): Promise<TerminalHost> };
  return m.startTerminalHost(o);
}

export const test = base.extend<object, { host: TerminalHost }>({
  host: [
    async ({}, use) => {
      const h = await startTerminalHost({ ports: { start: 47800, end: 47899 }, idBase: 700_000_000 });
      await use(h);
      await h.stop();
    },
    { scope: 'worker', timeout: 180_000 },
  ],
  server: [
    async ({ host }, use) => {
      const api = async (method: string, path: string, body?: unknown, key?: string) => {
        const r = await host.api(method, path, body, key);
        if (r.status !== 200 || r.body?.success === false) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
        return r.body;
      };
      const server: Server = {
        url: host.url,
        adminKey: host.ownerKey,
        api,
        advance: async () => {
          throw new Error('this server runs on the real clock');
        },
        lastCode: async (to) => {
          const { messages } = await api('GET', `/_emu/outbox?to=${encodeURIComponent(to)}`);
          return messages.at(-1)?.code;
        },
      };
      await use(server);
    },
    { scope: 'worker' },
  ],
});

export { expect };

/**
 * Issue 34: what the emulator's parts do around the server's start and stop, in order of registration (services.ts
 * registers them, main.ts runs them): load a saved state or a seed file before the server listens, start the agents
 * of machines with real containers and run init scripts once it listens, stop those agents when it closes.
 * Emulator mode only; production registers none.
 */
export interface EmulatorLifecycleHook {
  /** For the log line of a hook that fails. */
  name: string;
  /** Once the database is open and the owner exists, before the server listens. A throw stops the start. */
  beforeListen?(): Promise<void>;
  /** Once the server listens at `url` (its own address, loopback when bound to every address). */
  afterListen?(server: { url: string }): Promise<void>;
  /** When the server closes, before the database is closed; in reverse order of registration. */
  close?(): Promise<void>;
}

export function emulatorLifecycle() {
  const hooks: EmulatorLifecycleHook[] = [];
  return {
    hooks,
    add(hook: EmulatorLifecycleHook): void {
      hooks.push(hook);
    },
    async beforeListen(): Promise<void> {
      for (const h of hooks) await h.beforeListen?.();
    },
    async afterListen(server: { url: string }): Promise<void> {
      for (const h of hooks) await h.afterListen?.(server);
    },
    async close(): Promise<void> {
      for (const h of [...hooks].reverse()) await h.close?.();
    },
  };
}

export type EmulatorLifecycle = ReturnType<typeof emulatorLifecycle>;

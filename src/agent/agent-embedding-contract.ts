/**
 * What the rest of gpuplane may use of the agent: issue 34's real-container mode runs the real agent (the code
 * `gpuplane agent` runs, unchanged) in the emulator's own process for each simulated machine it adopts
 * (src/emulator/emu-containers/), on local Docker, with its own state directory, owner label and declared hardware,
 * and wraps its container runtime (no GPU device requests, a stand-in nvidia-smi) and its fetch (a host going silent).
 * Only the emulator imports this; the agent itself imports nothing of the server.
 */
export { startAgent, type RunningAgent } from './agent.js';
export { dockerDataPlane } from './agent-main.js';
export { realSystem } from './agent-system.js';
export { createDockerClient, createDockerRuntime } from './docker-runtime.js';
export { declaredHardware } from './hardware-file.js';
export { ownerId } from './owner.js';
export { openStateDir } from './state-store.js';
export { LABEL_INSTANCE, type ContainerOwner, type ContainerRuntime, type ContainerSpec } from './runtime.js';
export { tarOfFile } from './tar-file.js';
/** The agent's requests go through this (the SDK's transport); the emulator wraps it to silence a machine. */
export type { FetchLike } from '../sdk/transport.js';

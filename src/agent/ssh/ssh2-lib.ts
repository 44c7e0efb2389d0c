/**
 * The `ssh2` library, loaded at run time rather than bundled (as dockerode is, docker-runtime.ts): it reaches for an
 * optional native module (`sshcrypto.node`, `cpu-features`) that the CLI's one-file bundle cannot hold, and only the
 * agent's data plane needs it (bin/gpuplane.mjs: the bundle's `require` resolves from node_modules).
 */
import { createRequire } from 'node:module';
import type * as Ssh2 from 'ssh2';

let lib: typeof Ssh2 | undefined;

export function ssh2(): typeof Ssh2 {
  lib ??= createRequire(import.meta.url)('ssh2') as typeof Ssh2;
  return lib;
}

// Read once, when the module loads; the build (dist/gpuplane.mjs) carries it inline.
import pkg from '../../package.json' with { type: 'json' };

/** gpuplane's version, from package.json. */
export const VERSION: string = pkg.version;

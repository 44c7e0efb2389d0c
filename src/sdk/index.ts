/** Public entry of the gpuplane SDK. */
export { createClient, type GpuplaneClient } from './client.js';
export { GpuplaneError, InstanceFailedError, WaitTimeoutError, type ClientErrorCode } from './errors.js';
export type { ClientOptions, FetchLike, RequestOptions, Transport } from './transport.js';
export { FAILED_STATES, type InstanceState, type WaitOptions } from './wait.js';
export { readEvents, type ServerEvent } from './sse.js';

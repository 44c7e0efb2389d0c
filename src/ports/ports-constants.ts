/**
 * The ports feature's names, durations and limits (issue 32; design "Port access credentials"), in one place.
 */

/** The host-only cookie a port host sets once a credential was shown (a grant, a token in the URL, Jupyter's token). */
export const PORT_COOKIE = 'gpuplane_port';
/** The header an API client (curl, wrk) sends a per-port token in. */
export const PORT_TOKEN_HEADER = 'x-gpuplane-port-token';
/** The query parameter a per-port token comes in from a shared URL (it sets the cookie and is taken out of the URL). */
export const PORT_TOKEN_PARAM = 'gpuplane_token';
/** Where a console grant is redeemed on the port host. It never reaches the app. */
export const GRANT_PATH = '/_gpuplane/grant';
/** How long a console grant stays usable (design: one use, 60 s). */
export const GRANT_TTL_S = 60;
/**
 * How long the port cookie lives. Its holder's access is re-checked every ACCESS_CACHE_MS anyway: the expiry bounds a
 * cookie lifted from a browser, not who may use it.
 */
export const PORT_COOKIE_TTL_S = 12 * 3600;
/** Per-port tokens start so (other secrets: `gpk_` API keys, `gps_` sessions). */
export const PORT_TOKEN_PREFIX = 'gpp_';
/** The kv key of the secret the port cookies are signed with (made once by the first process that needs it). */
export const COOKIE_SECRET_KV = 'ports.cookie_secret';
/**
 * How long a user's access to an instance, and an instance port's token, are reused before they are read again: a
 * removed team member, a role losing instance_write, or a rotated token stops working within this time on other
 * server processes (at once on the process that rotated).
 */
export const ACCESS_CACHE_MS = 5000;
/** How long an instance's state (running, machine, ports) is reused: a burst of requests reads it once. */
export const INSTANCE_CACHE_MS = 1000;
/** Entries a cache holds before it is emptied (a scan of many ids cannot grow it without bound). */
export const CACHE_MAX_ENTRIES = 10_000;
/** Streams through the tunnel kept per instance port: open at once, and idle for reuse (keep-alive). */
export const MAX_STREAMS_PER_PORT = 256;
export const MAX_IDLE_STREAMS_PER_PORT = 32;
/** An idle kept-alive stream is closed after this long (before most apps' own keep-alive timeouts: Node's is 5 s). */
export const IDLE_STREAM_MS = 4000;
/** The longest path a grant or the console page takes the browser back to. */
export const MAX_RETURN_PATH = 2048;

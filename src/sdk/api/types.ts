/**
 * Reply and request types derived from the server: a route's TypeBox schema where the feature exports it (`Static<>`),
 * else the return type of the service method the route returns unchanged. All type-only: nothing reaches a bundle.
 */
import type { Services } from '../../services.js';

/** The awaited result of `services[K][M]`: what the route that calls it sends back. */
export type Svc<K extends keyof Services, M extends keyof Services[K]> = Services[K][M] extends (...args: any[]) => infer R
  ? Awaited<R>
  : never;

/** The awaited result of a service function. */
export type Ret<F> = F extends (...args: any[]) => infer R ? Awaited<R> : never;

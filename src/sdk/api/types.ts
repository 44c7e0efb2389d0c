/**
 * Reply and request types derived from the server: a route's TypeBox schema where the feature exports it (`Static<>`),
 * else the return type of the service method the route returns unchanged. All type-only: nothing reaches a bundle.
 */
/** The awaited result of the service method `S[M]`: what the route that calls it sends back. */
export type Svc<S, M extends keyof S> = S[M] extends (...args: any[]) => infer R ? Awaited<R> : never;

/** The awaited result of a service function. */
export type Ret<F> = F extends (...args: any[]) => infer R ? Awaited<R> : never;

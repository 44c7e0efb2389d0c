/** Benchmark results gpuplane has recorded: `GET /api/v0/benchmarks`. */
import type { Static } from 'typebox';
import type { BenchmarkObject } from '../../benchmarks/benchmarks-schemas.js';
import type { Transport } from '../transport.js';

export type Benchmark = Static<typeof BenchmarkObject>;

export function benchmarksApi(t: Transport) {
  return {
    /** `filters` in the offers' filter language; `orderBy` e.g. `[{col: 'last_update', dir: 'desc'}]`. */
    search: (filters: Record<string, unknown> = {}, opts: { orderBy?: { col: string; dir: 'asc' | 'desc' }[]; limit?: number } = {}) =>
      t.request<Benchmark[]>('GET', '/api/v0/benchmarks/', {
        query: { select_cols: ['*'], select_filters: filters, order_by: opts.orderBy, limit: opts.limit },
      }),
  };
}

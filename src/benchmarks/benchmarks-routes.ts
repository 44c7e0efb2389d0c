import { EMU, type TypedApp } from '../platform/http.js';
import { ErrorReply } from '../platform/schemas.js';
import type { BenchmarksService } from './benchmarks-service.js';
import { BenchmarksQuery, BenchmarksReply, EmuBenchmarkBody, EmuBenchmarkReply } from './benchmarks-schemas.js';

const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };

export async function benchmarksRoutes(app: TypedApp, { benchmarks }: { benchmarks: BenchmarksService }): Promise<void> {
  app.get('/api/v0/benchmarks/', {
    config: { category: 'misc' },
    schema: {
      tags: ['offers'],
      summary: 'Search recorded benchmark results: `select_filters` (the offers\' filter language), `order_by` [{col, dir}], `limit`',
      description: 'A bare list. Only results reported to gpuplane are there; with none, every search is `[]`.',
      querystring: BenchmarksQuery,
      response: { 200: BenchmarksReply, ...errors },
    },
  }, async (request) => benchmarks.search(request.query));
}

/** `POST /_emu/benchmarks`: records a result (emulator mode only). */
export async function benchmarksEmuRoutes(app: TypedApp, { benchmarks }: { benchmarks: BenchmarksService }): Promise<void> {
  app.post('/_emu/benchmarks', {
    config: EMU,
    schema: {
      tags: ['emulator'],
      summary: 'Record a benchmark result of a machine (its GPU model; all its GPUs unless num_gpus)',
      body: EmuBenchmarkBody,
      response: { 200: EmuBenchmarkReply, 404: ErrorReply, ...errors },
    },
  }, async (request) => benchmarks.record(request.body));
}

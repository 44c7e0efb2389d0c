/**
 * Benchmark results (`GET /api/v0/benchmarks`, docs/spec/client-compat-more.md §a): what gpuplane has recorded, searched with the
 * offers' filter language (offers/filter.ts: strict, a 400 names the mistake). gpuplane records a result only when
 * one is reported to it (the emulator's `POST /_emu/benchmarks`); with none recorded, every search is an empty list.
 */
import type { Static } from 'typebox';
import type { Clock } from '../platform/clock.js';
import type { Db } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { normalizeGpuName, parseFilterBody, selectRows, type FieldDef, type FieldTable, type FieldType } from '../offers/offers-contract.js';
import { benchmarksStore, type BenchmarkRow } from './benchmarks-store.js';
import type { BenchmarksQuery, EmuBenchmarkBody } from './benchmarks-schemas.js';

/** A search names no limit: every match, up to this server maximum. */
export const BENCHMARKS_MAX_LIMIT = 10_000;

const field = (name: keyof BenchmarkRow, type: FieldType, extra: Partial<FieldDef<BenchmarkRow, null>> = {}): [string, FieldDef<BenchmarkRow, null>] => [
  name,
  { type, get: (r) => r[name] as never, ...extra },
];

export const BENCHMARK_FIELDS: FieldTable<BenchmarkRow, null> = Object.fromEntries([
  field('id', 'integer'),
  field('machine_id', 'integer'),
  field('gpu_name', 'string', { normalize: normalizeGpuName, get: (r) => normalizeGpuName(r.gpu_name) }),
  field('num_gpus', 'integer'),
  field('value', 'number'),
  field('type', 'string'),
  field('template_hash', 'string'),
  field('template_id', 'integer'),
  field('contract_id', 'integer'),
  field('image', 'string'),
  field('launch_args', 'string'),
  field('last_update', 'number'),
]);

/** `vast.py`'s older names for two fields (its help still lists them). */
export const BENCHMARK_ALIASES: Record<string, string> = { score: 'value', name: 'template_hash' };

function json(name: string, raw: string | undefined): unknown {
  if (raw === undefined || raw === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw badRequest(`query.${name} must be JSON`);
  }
}

/** `order_by` as the clients send it, `[{"col", "dir"}]`, into the filter language's `[[field, dir]]`. */
function orderOf(raw: unknown): [string, string][] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw badRequest('query.order_by must be a JSON list of {"col", "dir"}');
  return raw.map((o, i) => {
    if (typeof o !== 'object' || o === null || typeof o.col !== 'string') throw badRequest(`query.order_by[${i}] must be {"col", "dir"}`);
    return [o.col, o.dir ?? 'asc'];
  });
}

export function benchmarksServiceFactory({ db, clock, machine }: { db: Db; clock: Clock; machine: (id: number) => Promise<{ gpu_name: string; num_gpus: number } | undefined> }) {
  const store = benchmarksStore(db);
  return {
    async search(query: Static<typeof BenchmarksQuery>): Promise<BenchmarkRow[]> {
      const cols = json('select_cols', query.select_cols);
      if (cols !== undefined && !(Array.isArray(cols) && cols.length === 1 && cols[0] === '*')) throw badRequest('query.select_cols: only ["*"] is served');
      const filters = json('select_filters', query.select_filters) ?? {};
      if (typeof filters !== 'object' || filters === null || Array.isArray(filters)) throw badRequest('query.select_filters must be a JSON object');
      for (const key of ['order', 'limit']) if (Object.hasOwn(filters, key)) throw badRequest(`query.select_filters.${key}: not a field (use order_by and limit)`);
      const order = orderOf(json('order_by', query.order_by));
      let q;
      try {
        q = parseFilterBody({ ...filters, ...(order ? { order } : {}) }, BENCHMARK_FIELDS, { aliases: BENCHMARK_ALIASES, maxLimit: BENCHMARKS_MAX_LIMIT });
      } catch (err) {
        if (err instanceof ApiError) throw badRequest(`query.select_filters: ${err.message}`);
        throw err;
      }
      const limit = Math.min(query.limit ?? BENCHMARKS_MAX_LIMIT, BENCHMARKS_MAX_LIMIT);
      return selectRows(await store.all(), null, q, BENCHMARK_FIELDS, limit, { field: 'id', desc: false });
    },

    /** The emulator's `POST /_emu/benchmarks`: a result of the machine's GPUs. */
    async record(body: Static<typeof EmuBenchmarkBody>) {
      const m = await machine(body.machine_id);
      if (!m) throw new ApiError('not_found', `machine ${body.machine_id} not found`);
      if (body.num_gpus !== undefined && body.num_gpus > m.num_gpus) throw badRequest(`num_gpus: machine ${body.machine_id} has ${m.num_gpus} GPUs`);
      const id = await store.insert({
        machine_id: body.machine_id,
        gpu_name: m.gpu_name,
        num_gpus: body.num_gpus ?? m.num_gpus,
        value: body.value,
        type: body.type ?? 'perf',
        template_hash: body.template_hash ?? null,
        template_id: body.template_id ?? null,
        contract_id: body.contract_id ?? null,
        image: body.image ?? null,
        launch_args: body.launch_args ?? null,
        last_update: body.last_update ?? clock.now(),
      });
      return { success: true as const, id };
    },
  };
}

export type BenchmarksService = ReturnType<typeof benchmarksServiceFactory>;

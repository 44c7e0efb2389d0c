/**
 * Each process's in-memory offer index: a cache of the database, which stays the truth. Before every search it
 * reads the fleet version (one indexed read, shared by the searches waiting for it; on SQLite reused while the
 * database has not changed, platform/db/read-cache.ts); when another writer (this process or another) has changed
 * the fleet, it reloads only the machines stamped with a newer version. A new epoch (a fresh seed after
 * `/_emu/reset`) reloads everything.
 *
 * Offers live in stable slots: each machine owns a fixed run of slots, one per bundle size it has (its GPU count
 * never changes), empty (null) while that bundle cannot be filled. A reload rewrites only the changed machines'
 * runs and logs them, so a search's column cache (offers/offer-columns.ts) patches those slots instead of
 * rebuilding 100,000 rows after every rent.
 */
import { coalescing } from '../platform/coalesce.js';
import type { ReadCache } from '../platform/db/read-cache.js';
import type { MachinesStore, MachineRow } from './machines-store.js';
import { toRecord } from './machines-store.js';
import { bundleSizes, offersOf, type GpuHold, type OfferEntry, type OfferSlots } from './machines-offers-contract.js';

/** Changed machines one freshness read brings at most (PostgreSQL); more are loaded the long way. */
const CHANGES_LIMIT = 500;

type FleetState = Readonly<{ version: number; epoch: string }>;

export class MachinesIndex {
  private epoch = '';
  private version = -1;
  private slots: (OfferEntry | null)[] = [];
  /** Machine id → its first slot. */
  private readonly runOf = new Map<number, number>();
  private generation = 0;
  private changes: number[] = [];
  private flat: OfferEntry[] | undefined = [];
  private loading: Promise<void> | undefined;

  constructor(
    private readonly store: MachinesStore,
    /** Reuse of the state read while the database is unchanged (SQLite; none on PostgreSQL). */
    private readonly stateReads?: ReadCache<FleetState>,
  ) {}

  /** Every offer of the fleet as of now (at least as new as every write committed before the call). */
  async offers(): Promise<readonly OfferEntry[]> {
    await this.refresh();
    if (!this.flat) this.flat = this.slots.filter((o): o is OfferEntry => o !== null);
    return this.flat;
  }

  /** The offer slots as of now (same freshness as `offers()`), for searches that keep columns per slot. */
  async current(): Promise<OfferSlots> {
    await this.refresh();
    return { slots: this.slots, generation: this.generation, changes: this.changes };
  }

  /**
   * The fleet's state, read after this call began: callers at once share one read (every search of a loaded server
   * asks), and a caller that comes while a read runs (it began too early: a write may have committed since) shares
   * the read that starts once that one ends (platform/coalesce.ts).
   */
  private readonly readState = coalescing(
    async (callers: undefined[]) => {
      const state = await this.readAndApply();
      return callers.map(() => state);
    },
    { maxBatch: Number.MAX_SAFE_INTEGER, maxInFlight: 1 },
  );

  private async refresh(): Promise<void> {
    // Loads run one at a time; a caller that waited for someone else's load checks the version again after it.
    for (;;) {
      while (this.loading) await this.loading;
      const state = await this.readState(undefined);
      if (!state) {
        if (this.runOf.size || this.epoch !== '') this.reset('', 0);
        return;
      }
      if (state.epoch === this.epoch && state.version <= this.version) return;
      if (this.loading) continue;
      this.loading = this.load(state).finally(() => {
        this.loading = undefined;
      });
      await this.loading;
      return;
    }
  }

  /**
   * The read behind `readState`. On PostgreSQL, once the index holds an epoch, it brings the machines changed since
   * the index's version too (`changesSince`, one statement) and applies them before anyone sees the state, so a
   * search whose fleet another process changed costs one statement, not three. What it cannot bring (a new epoch,
   * more than CHANGES_LIMIT machines) is left to `load`: the state goes back newer than the index.
   */
  private async readAndApply(): Promise<FleetState | undefined> {
    if (!this.store.changesSince || this.epoch === '' || this.loading) return this.readStateRow();
    const since = this.version;
    const got = await this.store.changesSince(since, this.epoch, CHANGES_LIMIT);
    if (!got) return undefined;
    // Applied only onto the index it was read for: a load that ran meanwhile has moved it on.
    if (got.complete && !this.loading && got.state.epoch === this.epoch && this.version === since && got.state.version > since) {
      this.apply(got.state, got.machines);
    }
    return got.state;
  }

  private readStateRow(): Promise<FleetState | undefined> {
    if (!this.stateReads) return this.store.state();
    return this.stateReads.through('fleet_state', async () => {
      const state = await this.store.state();
      return state && Object.freeze(state);
    });
  }

  private reset(epoch: string, version: number): void {
    this.runOf.clear();
    this.slots = [];
    this.flat = [];
    this.epoch = epoch;
    this.version = version;
    this.newGeneration();
  }

  private newGeneration(): void {
    this.generation++;
    this.changes = [];
  }

  private async load(state: FleetState): Promise<void> {
    const full = state.epoch !== this.epoch;
    const since = full ? -1 : this.version;
    const rows = await this.store.machinesAbove(since);
    const gpus = await this.store.gpusOf(rows.map((r) => r.id));
    if (full) this.reset(state.epoch, state.version);
    this.apply(state, rows.map((row) => ({ row, gpus: gpus.get(row.id) ?? [] })));
  }

  /** Rewrites the changed machines' slot runs; the index is then as of `state`. */
  private apply(state: FleetState, machines: ReadonlyArray<{ row: MachineRow; gpus: readonly GpuHold[] }>): void {
    // A long log costs more to replay than a rebuild: start a new generation instead.
    if (this.changes.length > this.slots.length) this.newGeneration();
    for (const { row, gpus } of machines) {
      const record = toRecord(row);
      const sizes = bundleSizes(record.num_gpus);
      let start = this.runOf.get(record.id);
      if (start === undefined) {
        start = this.slots.length;
        this.runOf.set(record.id, start);
        for (let k = 0; k < sizes.length; k++) this.slots.push(null);
      } else {
        for (let k = 0; k < sizes.length; k++) this.slots[start + k] = null;
      }
      for (const o of offersOf(record, gpus)) this.slots[start + sizes.indexOf(o.num_gpus)] = o;
      this.changes.push(start, sizes.length);
    }
    // Rows newer than `state` may have been read too; loading them again next time is harmless.
    this.version = state.version;
    if (machines.length) this.flat = undefined;
  }
}

/**
 * Volumes (contract §3): search volume offers with the offers' filter language, create, list, delete; and the
 * instances feature's VolumesPort, which links a volume to a new instance or creates one for it. A volume lives on
 * one machine, is billed from creation to deletion (a `volume` meter on contract `volume-<id>`) and may be mounted
 * by instances of that machine.
 */
import { scopeOf, type Principal, type Scope } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { diskRateMicro, toDollars } from '../platform/money.js';
import type { BillingApi } from '../billing/billing-contract.js';
import { isRentable, type MachineRecord } from '../machines/machines-offers-contract.js';
import { coerce, parseFilterBody, selectRows } from '../offers/offers-contract.js';
import type { VolumeInfo, VolumesPort } from '../instances/instances-contract.js';
import {
  DEFAULT_VOLUME_STORAGE_GB, machineOfVolumeOffer, VOLUME_OFFER_ALIASES, VOLUME_OFFER_FIELDS, volumeOfferJson,
  type VolumeOffer, type VolumeOfferContext,
} from './volume-offers.js';
import { volumesStore, type VolumeAskRow, type VolumeRow } from './volumes-store.js';
import type { MachineVolumes } from './volumes-contract.js';
import type { VolumeMountT } from '../protocol/agent-protocol-schemas.js';
import type { Static } from 'typebox';
import { MAX_VOLUME_NAME_CHARS, type CreateVolumeBody, type ListVolumeOfferBody, type VolumeObject } from './volumes-schemas.js';
import { MAX_ID } from '../platform/schemas.js';

export const VOLUME_SEARCH_DEFAULT_LIMIT = 64;
export const VOLUME_SEARCH_MAX_LIMIT = 1000;
/** Largest `allocated_storage` a volume search may price in, GB. */
export const MAX_VOLUME_STORAGE_GB = 1_000_000;

/** The machines behind volume offers. The fleet has no list call in MachinesApi yet; services.ts wires a read of it. */
export interface VolumesMachinesPort {
  machines(): Promise<MachineRecord[]>;
  machine(id: number, tx?: Tx): Promise<MachineRecord | undefined>;
  /** The user who hosts the machine (its volume offer is theirs to unlist), or undefined. */
  hostUserOf?(id: number, tx?: Tx): Promise<number | undefined>;
}

export interface VolumesDeps {
  store: Store;
  clock: Clock;
  billing: Pick<BillingApi, 'startMeter' | 'stopContract' | 'assertCredit' | 'changePayer'>;
  fleet: VolumesMachinesPort;
  /** Throws ApiError when the account may not rent (a host-only subaccount, src/subaccounts/). */
  mayRent?: (userId: number, tx?: Tx) => Promise<void>;
}

export const volumeContractOf = (id: number) => `volume-${id}`;

/**
 * GB the machine offers for volumes in all: its host's `vol_size` (null: half its free disk, the vastai client's
 * default), never more than the free disk its agent reports; a machine without an ask offers all its free disk.
 */
export function offeredGb(m: MachineRecord, ask: VolumeAskRow | undefined): number {
  if (!ask) return m.spec.disk_space;
  return Math.min(m.spec.disk_space, ask.size_gb ?? Math.floor(m.spec.disk_space / 2));
}

/** $/GB/month of the machine's volumes, micro-dollars: its host's `vol_price`, else its `price_disk`. */
export const askPriceMicro = (m: MachineRecord, ask: VolumeAskRow | undefined): number => ask?.price_disk_micro ?? m.price_disk_micro;

export function volumesServiceFactory({ store, clock, billing, fleet, mayRent }: VolumesDeps) {
  const volumes = volumesStore(store.db, store.dialect);

  const searchOptions = {
    allocated_storage: (v: unknown): number => {
      if (v === null || v === undefined) return DEFAULT_VOLUME_STORAGE_GB;
      const n = coerce({ type: 'number', get: () => null }, v, 'allocated_storage') as number;
      if (n < 0 || n > MAX_VOLUME_STORAGE_GB) throw badRequest(`allocated_storage: must be from 0 to ${MAX_VOLUME_STORAGE_GB} GB`);
      return n;
    },
  };

  /** Creates the volume inside `tx`: space checked under the machine's lock, meter started at the same second. */
  async function createIn(tx: Tx, scope: Scope, offerId: number, sizeGb: number, name: string | null, expectMachine?: number): Promise<VolumeRow> {
    const machineId = machineOfVolumeOffer(offerId);
    const machine = machineId === undefined ? undefined : await fleet.machine(machineId, tx);
    if (!machine) throw new ApiError('not_found', `volume offer ${offerId} not found`);
    if (expectMachine !== undefined && machine.id !== expectMachine) {
      throw badRequest(`volume_info.volume_id: volume offer ${offerId} is on machine ${machine.id}, not on the instance's machine ${expectMachine}`);
    }
    const now = clock.now();
    if (!isRentable(machine, now) || (await volumes.isUnlisted(machine.id, tx))) {
      throw new ApiError('offer_unavailable', `volume offer ${offerId} is no longer available`);
    }
    if (!(sizeGb > 0) || !Number.isFinite(sizeGb)) throw badRequest('size must be a positive number of GB');
    if (name !== null && name.length > MAX_VOLUME_NAME_CHARS) throw badRequest(`name is longer than ${MAX_VOLUME_NAME_CHARS} characters`);
    await billing.assertCredit(scope.userId, tx);
    await volumes.lockMachineSpace(machine.id, tx);
    const ask = await volumes.askOf(machine.id, tx);
    const free = offeredGb(machine, ask) - ((await volumes.usedGb(machine.id, tx)).get(machine.id) ?? 0);
    if (sizeGb > free) throw badRequest(`size ${sizeGb} GB is more than the ${Math.max(0, free)} GB free on volume offer ${offerId}`);
    const priceDiskMicro = askPriceMicro(machine, ask);
    const row = {
      user_id: scope.userId,
      team_id: scope.teamId,
      offer_id: offerId,
      machine_id: machine.id,
      host_id: machine.host_id,
      name,
      size_gb: sizeGb,
      price_disk_micro: priceDiskMicro,
      rate_micro: diskRateMicro(priceDiskMicro, sizeGb),
      created_at: now,
      deleted_at: null,
    };
    const id = await volumes.insert(row, tx);
    await billing.startMeter(tx, {
      contract: volumeContractOf(id),
      type: 'volume',
      kind: 'volume',
      userId: scope.userId,
      teamId: scope.teamId,
      rateMicroPerHour: row.rate_micro,
      at: now,
      description: `${sizeGb} GB volume ${id} on machine ${machine.id}`,
      metadata: name ? { label: name } : {},
    });
    return { id, ...row };
  }

  /** The volume object of `show volumes` (the fields the vastai client prints, plus size and price). */
  function toVolumeObject(v: VolumeRow, m: MachineRecord | undefined, instances: number[], now: number): Static<typeof VolumeObject> {
    return {
      id: v.id,
      name: v.name,
      label: v.name,
      cluster_id: m?.spec.cluster_id ?? null,
      machine_id: v.machine_id,
      host_id: v.host_id,
      disk_space: v.size_gb,
      size: v.size_gb,
      status: instances.length ? 'in_use' : 'ready',
      instances,
      storage_cost: toDollars(v.price_disk_micro),
      dph_total: toDollars(v.rate_micro),
      disk_name: m?.spec.disk_name ?? null,
      driver_version: m?.spec.driver_version ?? null,
      inet_up: m?.spec.inet_up ?? 0,
      inet_down: m?.spec.inet_down ?? 0,
      reliability2: m?.spec.reliability ?? 0,
      geolocation: m?.spec.geolocation ?? null,
      verification: m?.verification ?? null,
      start_date: v.created_at,
      duration: Math.max(0, now - v.created_at),
    };
  }

  /**
   * The hosting feature's `list machine` (`create_asks`): `vol_size` 0 unlists the machine's volume offer; otherwise
   * it is listed with `vol_size` GB in all (null: half the machine's free disk) at `vol_price` $/GB/month (null:
   * the machine's `price_disk`), as the vastai client documents `-v` and `-z`.
   */
  async function setAsk(tx: Tx, machineId: number, ask: { vol_size?: number | null; vol_price?: number | null }): Promise<void> {
    const now = clock.now();
    await volumes.setListed(machineId, ask.vol_size !== 0, now, tx);
    // Neither sent (a client other than vastai, which sends both, null when not given): the ask stays as it was.
    if (ask.vol_size === 0 || (ask.vol_size === undefined && ask.vol_price === undefined)) return;
    await volumes.setAsk({ machine_id: machineId, size_gb: ask.vol_size ?? null, price_disk_micro: ask.vol_price == null ? null : Math.round(ask.vol_price * 1e6), updated_at: now }, tx);
  }

  const port: VolumesPort = {
    async attachAtCreate(tx, { instanceId, machineId, scope, volume }): Promise<VolumeInfo> {
      let volumeId = volume.volume_id;
      if (volume.create_new) {
        volumeId = (await createIn(tx, scope, volume.volume_id, volume.size ?? 0, volume.name, machineId)).id;
      } else {
        const found = await volumes.findInScope(volume.volume_id, scope, tx, true);
        if (!found) throw new ApiError('not_found', `volume ${volume.volume_id} not found`);
        if (found.machine_id !== machineId) {
          throw badRequest(`volume_info.volume_id: volume ${found.id} is on machine ${found.machine_id}; rent an offer of that machine to mount it`);
        }
      }
      await volumes.mount({ volume_id: volumeId, instance_id: instanceId, mount_path: volume.mount_path, attached_at: clock.now() }, tx);
      // What the instance shows: the volume it mounts (for create_new, the new volume's id, not the offer's).
      return { ...volume, volume_id: volumeId, create_new: false };
    },

    async detachAll(tx, instanceId) {
      await volumes.unmountInstance(instanceId, tx);
    },
  };

  return {
    port,
    /**
     * Team member removal hook: the team's volumes still paid by the member (made before a team's work was paid by
     * its owner, issue 29 item 17) become the owner's, billing included from `at`.
     */
    async handOver(tx: Tx, m: { teamId: number; fromUserId: number; toUserId: number; at: number }): Promise<void> {
      for (const id of await volumes.moveTeamPayer(m.teamId, m.fromUserId, m.toUserId, tx)) {
        await billing.changePayer(tx, { contract: volumeContractOf(id), userId: m.toUserId, at: m.at });
      }
    },
    /** For the hosting feature's earnings: the billing contract of every volume made on these machines. */
    async contractsOn(machineIds: readonly number[], tx?: Tx): Promise<{ source: string; machine_id: number }[]> {
      return (await volumes.onMachines(machineIds, tx)).map((v) => ({ source: volumeContractOf(v.id), machine_id: v.machine_id }));
    },

    /** `POST /api/v0/volumes/search/`: the offers' filter body over volume offers. */
    async search(body: unknown): Promise<{ offers: VolumeOffer[] }> {
      const q = parseFilterBody(body, VOLUME_OFFER_FIELDS, { options: searchOptions, aliases: VOLUME_OFFER_ALIASES, maxLimit: VOLUME_SEARCH_MAX_LIMIT });
      const ctx: VolumeOfferContext = { storage_gb: (q.options.allocated_storage as number | undefined) ?? DEFAULT_VOLUME_STORAGE_GB, now: clock.now() };
      // An offer without room for the storage asked for cannot hold it.
      q.clauses.push({ field: 'disk_space', op: 'gte', value: ctx.storage_gb });
      if (q.order.length === 0) q.order = [{ field: 'score', desc: true }];
      const used = await volumes.usedGb();
      const unlisted = await volumes.unlistedMachines();
      const asks = await volumes.asks();
      const rows = (await fleet.machines())
        .filter((m) => isRentable(m, ctx.now) && !unlisted.has(m.id))
        .map((m) => volumeOfferJson(m, used.get(m.id) ?? 0, ctx, { offeredGb: offeredGb(m, asks.get(m.id)), priceDiskMicro: askPriceMicro(m, asks.get(m.id)) }));
      return { offers: selectRows(rows, ctx, q, VOLUME_OFFER_FIELDS, q.limit ?? VOLUME_SEARCH_DEFAULT_LIMIT, { field: 'id', desc: false }) };
    },

    /** `PUT /api/v0/volumes/` `{id: volume offer id, size, name?}`. */
    async create(principal: Principal, body: Static<typeof CreateVolumeBody>) {
      await mayRent?.(principal.user.id);
      const v = await store.db.transaction().execute((tx) => createIn(tx, scopeOf(principal), body.id, body.size, body.name ?? null));
      return { success: true as const, volume_id: v.id, id: v.id, msg: `volume ${v.id} created: ${v.size_gb} GB on machine ${v.machine_id}` };
    },

    /** `GET /api/v0/volumes/`: the scope's live volumes. */
    async list(principal: Principal) {
      const rows = await volumes.listInScope(scopeOf(principal));
      const mounts = await volumes.mountsOf(rows.map((r) => r.id));
      const machines = new Map<number, MachineRecord | undefined>();
      for (const r of rows) if (!machines.has(r.machine_id)) machines.set(r.machine_id, await fleet.machine(r.machine_id));
      const now = clock.now();
      const list = rows.map((r) => toVolumeObject(r, machines.get(r.machine_id), mounts.filter((m) => m.volume_id === r.id).map((m) => m.instance_id), now));
      return { success: true as const, volumes: list };
    },

    /**
     * `unlist volume` (`POST /api/v0/volumes/unlist`, docs/spec/client-compat-more.md §f): the host stops offering the machine's
     * disk as volumes; volumes already made there stay, and are billed, until their owners delete them. `list machine`
     * without `vol_size` 0 offers it again (setListed, through the hosting feature).
     */
    async unlist(principal: Principal, offerId: number) {
      const machineId = machineOfVolumeOffer(offerId);
      const machine = machineId === undefined || machineId > MAX_ID ? undefined : await fleet.machine(machineId);
      const host = machine && (await fleet.hostUserOf?.(machine.id));
      if (!machine || (!principal.user.is_admin && host !== principal.user.id)) throw new ApiError('not_found', `volume offer ${offerId} not found`);
      await volumes.setListed(machine.id, false, clock.now());
      return { success: true as const, msg: `volume offer ${offerId} unlisted: no new volumes on machine ${machine.id}; existing volumes stay` };
    },

    /**
     * `list volume(s)` (`POST /api/v0/volumes/`): the host's machines offer `size` GB as volumes at `price_disk`, as
     * `list machine -v -z` does (0: no offer). Every machine must be the caller's (an admin's: any), or nothing changes.
     */
    async listOffer(principal: Principal, body: Static<typeof ListVolumeOfferBody>) {
      const ids = [...new Set(Array.isArray(body.machine) ? body.machine : [body.machine])];
      await store.db.transaction().execute(async (tx) => {
        for (const id of ids) {
          const machine = id > MAX_ID ? undefined : await fleet.machine(id, tx);
          const host = machine && (await fleet.hostUserOf?.(machine.id, tx));
          if (!machine || (!principal.user.is_admin && host !== principal.user.id)) throw new ApiError('not_found', `machine ${id} not found`);
          await setAsk(tx, machine.id, { vol_size: body.size, vol_price: body.size === 0 ? null : body.price_disk });
        }
      });
      const what = body.size === 0 ? 'no volume offer' : `${body.size} GB for volumes at $${body.price_disk}/GB/month`;
      return { success: true as const, msg: `machine${ids.length > 1 ? 's' : ''} ${ids.join(', ')}: ${what}${body.end_date != null ? ' (end_date is not kept: the offer lasts as the machine\'s listing)' : ''}` };
    },

    /** The hosting feature's `list machine`: `vol_size` 0 unlists the machine's volume offer, anything else lists it. */
    setListed: (tx: Tx, machineId: number, listed: boolean) => volumes.setListed(machineId, listed, clock.now(), tx),

    setAsk,

    /** `vastai copy V.<id>:path` (src/copy/): the instances that mount the caller's volume, and where; undefined when not theirs. */
    async mountsOf(principal: Principal, volumeId: number): Promise<{ instanceId: number; mountPath: string }[] | undefined> {
      if (!Number.isSafeInteger(volumeId) || volumeId > MAX_ID) return undefined;
      const v = await volumes.findInScope(volumeId, scopeOf(principal));
      if (!v) return undefined;
      return (await volumes.mountsOf([v.id])).map((m) => ({ instanceId: m.instance_id, mountPath: m.mount_path }));
    },

    /** The agent server's desired state of a machine: its live volumes, and where each instance mounts one. */
    async desiredOn(machineId: number, tx: Tx): Promise<MachineVolumes> {
      const live = await volumes.liveOnMachine(machineId, tx);
      const mounts = new Map<number, VolumeMountT[]>();
      for (const m of await volumes.mountsOnMachine(machineId, tx)) {
        const list = mounts.get(m.instance_id) ?? [];
        list.push({ volume_id: m.volume_id, mount_path: m.mount_path });
        mounts.set(m.instance_id, list);
      }
      return { volumes: live.map((v) => ({ volume_id: v.id, size_gb: v.size_gb })), mounts };
    },

    /** `DELETE /api/v0/volumes/?id=N`: only once no live instance mounts it; billing stops at that second. */
    async remove(principal: Principal, id: number) {
      return store.db.transaction().execute(async (tx) => {
        const v = await volumes.findInScope(id, scopeOf(principal), tx, true);
        if (!v) throw new ApiError('not_found', `volume ${id} not found`);
        const using = (await volumes.mountsOf([id], tx)).map((m) => m.instance_id);
        if (using.length) throw new ApiError('conflict', `volume ${id} is mounted by instance ${using.join(', ')}: destroy those instances first`);
        const now = clock.now();
        await volumes.markDeleted(id, now, tx);
        await billing.stopContract(tx, { contract: volumeContractOf(id), at: now });
        return { success: true as const, msg: `volume ${id} deleted` };
      });
    },
  };
}

export type VolumesService = ReturnType<typeof volumesServiceFactory>;

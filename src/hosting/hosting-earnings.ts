/**
 * `show earnings` (`GET /users/me/machine-earnings`): what renters paid for instances and volumes on the host's
 * machines, from the billing ledger's settled daily charges, less the platform's service fee
 * (GPUPLANE_HOST_SERVICE_FEE).
 * `sday`/`eday` are days since 1970-01-01 (floats, as the client sends them); the days from floor(sday) to
 * floor(eday) count, both included, so `sday == eday` (the client's default) is that one day.
 */
import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Tx } from '../platform/db/connect.js';
import { badRequest } from '../platform/errors.js';
import type { MachinesService } from '../machines/machines-service.js';
import type { PlacedInstance } from '../instances/instances-contract.js';
import type { BillingService } from '../billing/billing-service.js';
import type { HostingService } from './hosting-service.js';
import { jsonQuery } from './hosting-service.js';

const DAY_S = 86_400;
/** Days since the epoch a query may name (year 4707): beyond it a day's seconds leave the safe range of the columns. */
const MAX_DAY = 1_000_000;

export interface EarningsDeps {
  clock: Clock;
  fleet: MachinesService['hosting'];
  hosting: Pick<HostingService, 'own'>;
  instancesOn: (machineIds: readonly number[], tx?: Tx) => Promise<PlacedInstance[]>;
  volumesOn: (machineIds: readonly number[]) => Promise<{ source: string; machine_id: number }[]>;
  dailyCharges: (sources: readonly string[], fromDay: number, toDay: number) => ReturnType<BillingService['dailyCharges']>;
  /** Fraction of what renters paid that the platform keeps. */
  serviceFee: number;
}

interface Sums {
  gpu: number;
  sto: number;
  bw: number;
}

function day(name: string, raw: string | undefined, fallback: number): number {
  const v = jsonQuery(name, raw);
  if (v === undefined || v === null) return fallback;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > MAX_DAY) throw badRequest(`${name}: must be days since 1970-01-01, e.g. 19723.0`);
  return Math.floor(n);
}

export function hostingEarningsFactory(deps: EarningsDeps) {
  const { clock, fleet, hosting, instancesOn, volumesOn, dailyCharges, serviceFee } = deps;

  function money(s: Sums) {
    const gross = s.gpu + s.sto + s.bw;
    const fee = Math.round(gross * serviceFee);
    return { gpu_earn: s.gpu / 1e6, sto_earn: s.sto / 1e6, bw_earn: s.bw / 1e6, gross: gross / 1e6, fee: fee / 1e6, earn: (gross - fee) / 1e6 };
  }

  return {
    async earnings(p: Principal, q: { sday?: string; eday?: string; machid?: string }) {
      const today = Math.floor(clock.now() / DAY_S);
      const sday = day('sday', q.sday, today);
      const eday = day('eday', q.eday, sday);
      if (eday < sday) throw badRequest('eday: must not be before sday');
      const machid = jsonQuery('machid', q.machid);
      let machineIds: number[];
      if (machid === undefined || machid === null) {
        machineIds = await fleet.machineIdsOf(p.user.id);
      } else {
        const id = typeof machid === 'string' && /^\d+$/.test(machid) ? Number(machid) : machid;
        if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw badRequest('machid: must be a machine id or null');
        await hosting.own(p, id);
        machineIds = [id];
      }
      const placed = await instancesOn(machineIds);
      const machineOf = new Map(placed.map((i) => [`instance-${i.id}`, i.machine_id]));
      for (const v of await volumesOn(machineIds)) machineOf.set(v.source, v.machine_id);
      const charges = machineOf.size ? await dailyCharges([...machineOf.keys()], sday * DAY_S, eday * DAY_S) : [];
      const total: Sums = { gpu: 0, sto: 0, bw: 0 };
      const perMachine = new Map<number, Sums>();
      const perDay = new Map<number, Sums>();
      const add = (map: Map<number, Sums>, key: number) => {
        let s = map.get(key);
        if (!s) map.set(key, (s = { gpu: 0, sto: 0, bw: 0 }));
        return s;
      };
      for (const c of charges) {
        const part: keyof Sums = c.kind === 'gpu' ? 'gpu' : c.kind === 'bandwidth' ? 'bw' : 'sto';
        for (const s of [total, add(perMachine, machineOf.get(c.source)!), add(perDay, Math.floor(c.day / DAY_S))]) s[part] += c.amount_micro;
      }
      return {
        success: true,
        sday,
        eday,
        service_fee: serviceFee,
        summary: money(total),
        per_machine: [...perMachine.entries()].sort((a, b) => a[0] - b[0]).map(([machine_id, s]) => ({ machine_id, ...money(s) })),
        per_day: [...perDay.entries()].sort((a, b) => a[0] - b[0]).map(([d, s]) => ({ day: d, ...money(s) })),
      };
    },
  };
}

export type HostingEarnings = ReturnType<typeof hostingEarningsFactory>;

/** The JSON a host sees of its machines and maintenance windows (hosting-schemas.ts: MachineRow, MaintenanceWindow). */
import { isRentable, UNRENTABLE_FAULTS, type HostedMachine, type MaintWindow } from '../machines/machines-offers-contract.js';

const dollars = (micro: number) => micro / 1e6;

export function maintenanceJson(machineId: number, w: MaintWindow) {
  return { machine_id: machineId, start_time: w.start, end_time: w.end, duration_hours: w.hours, maintenance_category: w.category };
}

/** One letter per GPU: `D` held on demand, `I` held by a bid (interruptible), `x` idle. */
function occupancy(m: HostedMachine): string {
  return m.gpus.map((g) => (g.instance_id === null ? 'x' : g.hold_kind === 'bid' ? 'I' : 'D')).join(' ');
}

export function machineJson(m: HostedMachine, now: number, hasDefjob: boolean) {
  const r = m.record;
  const s = r.spec as typeof r.spec & { hostname?: string };
  return {
    id: r.id,
    host_id: r.host_id,
    num_gpus: r.num_gpus,
    gpu_name: r.gpu_name,
    disk_space: s.disk_space,
    hostname: typeof s.hostname === 'string' ? s.hostname : `machine-${r.id}`,
    driver_version: s.driver_version,
    reliability2: s.reliability,
    verification: r.verification,
    public_ipaddr: r.public_ipaddr,
    geolocation: s.geolocation ?? null,
    // Renters cannot file reports yet (client-compat-more.md: an empty list is a valid answer).
    num_reports: 0,
    listed: r.listed,
    rentable: isRentable(r, now),
    // A GPU fault (issue 33) takes no renters, but the host is there: online is about its agent.
    online: r.fault === 'gpu' || !UNRENTABLE_FAULTS.has(r.fault ?? ''),
    listed_gpu_cost: dollars(r.price_gpu_micro),
    min_bid_price: dollars(r.min_bid_micro),
    credit_discount_max: r.credit_discount_max,
    listed_storage_cost: dollars(r.price_disk_micro),
    listed_inet_up_cost: dollars(r.price_inetu_micro),
    listed_inet_down_cost: dollars(r.price_inetd_micro),
    min_chunk: r.min_chunk,
    end_date: r.end_date,
    listing_duration: r.listing_duration,
    gpu_occupancy: occupancy(m),
    current_rentals_running: new Set(m.gpus.filter((g) => g.instance_id !== null).map((g) => g.instance_id)).size,
    maintenance: r.maint.filter((w) => w.end > now).map((w) => maintenanceJson(r.id, w)),
    has_defjob: hasDefjob,
    // Whether renters' `disk` is enforced on this host (issue 29 item 14); null where no agent said (simulated machines).
    disk_limit: typeof s.disk_limit === 'boolean' ? s.disk_limit : null,
  };
}

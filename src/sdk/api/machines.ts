/** The host side (client-compat-more.md §a): a host's machines, listings, maintenance windows and earnings. */
import type { Static } from 'typebox';
import type {
  CleanupReply,
  CreateAsksBody,
  CreateAsksReply,
  DefJobBody,
  DefragReply,
  EarningsReply,
  MachineReply,
  MachineRow,
  MachinesReply,
  MaintenancesReply,
  OkReply,
  ReportsReply,
} from '../../hosting/hosting-schemas.js';
import type { Transport } from '../transport.js';

export type Machine = Static<typeof MachineRow>;
/** `list machine`: prices in $ (per GPU per hour, per GB per month, per GB transferred); null or omitted keeps a value. */
export type ListMachine = Static<typeof CreateAsksBody>;
export type DefaultJob = Static<typeof DefJobBody>;
type Ok = Static<typeof OkReply>;

export function machinesApi(t: Transport) {
  return {
    /** Your machines; `owner: 'all'` (admins) every host's. */
    list: (owner: 'me' | 'all' = 'me') => t.request<Static<typeof MachinesReply>>('GET', '/api/v0/machines', { query: { owner } }),
    /** One of your machines (undefined when there is none such). */
    show: async (id: number): Promise<Machine | undefined> => (await t.request<Static<typeof MachineReply>>('GET', `/api/v0/machines/${id}`, { query: { owner: 'me' } }))[0],
    /** Maintenance windows to come of the machines (default: all yours). */
    maintenances: (machineIds?: number[]) =>
      t.request<Static<typeof MaintenancesReply>>('GET', '/api/v0/machines/maintenances', {
        query: { owner: 'me', ...(machineIds ? { machine_ids: JSON.stringify(machineIds) } : {}) },
      }),
    /** Lists the machine for rent (or changes its listing). */
    listMachine: (body: ListMachine) => t.request<Static<typeof CreateAsksReply>>('PUT', '/api/v0/machines/create_asks/', { body }),
    unlist: (id: number) => t.request<Ok>('DELETE', `/api/v0/machines/${id}/asks/`, { body: {} }),
    setMinBid: (id: number, price: number) => t.request<Ok>('PUT', `/api/v0/machines/${id}/minbid/`, { body: { client_id: 'me', price } }),
    setDefaultJob: (body: DefaultJob) => t.request<Ok>('PUT', '/api/v0/machines/create_bids/', { body }),
    removeDefaultJob: (id: number) => t.request<Ok>('DELETE', `/api/v0/machines/${id}/defjob/`, { body: {} }),
    /** A maintenance window from `sdate` (epoch seconds) for `hours`. */
    scheduleMaintenance: (id: number, sdate: number, hours: number, category?: string) =>
      t.request<Ok>('PUT', `/api/v0/machines/${id}/dnotify/`, { body: { client_id: 'me', sdate, duration: hours, maintenance_category: category ?? 'not provided' } }),
    cancelMaintenance: (id: number) => t.request<Ok>('PUT', `/api/v0/machines/${id}/cancel_maint/`, { body: { client_id: 'me', machine_id: id } }),
    cleanup: (id: number) => t.request<Static<typeof CleanupReply>>('PUT', `/api/v0/machines/${id}/cleanup/`, { body: {} }),
    /** Deletes the machine; refused (409) while clients have instances on it. */
    remove: (id: number) => t.request<Ok>('POST', `/api/v0/machines/${id}/force_delete/`, { body: {} }),
    reports: (id: number) => t.request<Static<typeof ReportsReply>>('GET', `/api/v0/machines/${id}/reports/`),
    defrag: (machineIds: number[]) => t.request<Static<typeof DefragReply>>('PUT', '/api/v0/machines/defrag_offers/', { body: { machine_ids: machineIds } }),
    /**
     * Earnings on the days from `sday` to `eday` (days since 1970-01-01, both included), of one machine or all yours.
     * Omitted: `sday` is the server's today, `eday` is `sday`.
     */
    earnings: (q: { sday?: number; eday?: number; machineId?: number } = {}) =>
      t.request<Static<typeof EarningsReply>>('GET', '/api/v0/users/me/machine-earnings', {
        query: {
          owner: 'me',
          ...(q.sday === undefined ? {} : { sday: String(q.sday) }),
          ...(q.eday === undefined ? {} : { eday: String(q.eday) }),
          machid: q.machineId === undefined ? 'null' : String(q.machineId),
        },
      }),
  };
}

/**
 * Overlay networks, network disks and network volumes. This server has no cross-host networking nor shared storage:
 * the lists are empty and every change rejects with a GpuplaneError 503 `service_unavailable` saying what is missing.
 */
import type { Static } from 'typebox';
import type {
  AddNetworkDiskBody, CreateNetworkVolumeBody, ListNetworkVolumeBody, NetworkDisksReply, NetworkVolumeOffersReply, OverlaysReply,
} from '../../network/network-schemas.js';
import type { Transport } from '../transport.js';
import type { OfferSearch } from './offers.js';

type Msg = { success: boolean; msg: string };

export function networkApi(t: Transport) {
  return {
    overlays: () => t.request<Static<typeof OverlaysReply>>('GET', '/api/v0/overlay/'),
    createOverlay: (clusterId: number, name: string) => t.request<Msg>('POST', '/api/v0/overlay/', { body: { cluster_id: clusterId, name } }),
    joinOverlay: (name: string, instanceId: number) => t.request<Msg>('PUT', '/api/v0/overlay/', { body: { name, instance_id: instanceId } }),
    deleteOverlay: (idOrName: number | string) =>
      t.request<Msg>('DELETE', '/api/v0/overlay/', { body: typeof idOrName === 'number' ? { overlay_id: idOrName } : { overlay_name: idOrName } }),
    networkDisks: async () => (await t.request<Static<typeof NetworkDisksReply>>('GET', '/api/v0/network_disk/')).data,
    addNetworkDisk: (body: Static<typeof AddNetworkDiskBody>) => t.request<Msg & { disk_id: number }>('POST', '/api/v0/network_disk/', { body }),
    searchNetworkVolumes: (query: OfferSearch) =>
      t.request<Static<typeof NetworkVolumeOffersReply>>('POST', '/api/v0/network_volumes/search/', { body: query }),
    createNetworkVolume: (body: Static<typeof CreateNetworkVolumeBody>) => t.request<Msg>('PUT', '/api/v0/network_volumes/', { body }),
    /** The host side: offer a network disk for rent as network volumes. */
    listNetworkVolume: (body: Static<typeof ListNetworkVolumeBody>) => t.request<Msg>('POST', '/api/v0/network_volumes/', { body }),
    unlistNetworkVolume: (offerId: number) => t.request<Msg>('POST', '/api/v0/network_volumes/unlist/', { body: { id: offerId } }),
  };
}

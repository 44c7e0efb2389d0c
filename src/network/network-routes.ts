/**
 * Overlay networks, network disks, network volumes and volume copies (docs/spec/client-compat-more.md §f). Each needs what this
 * gpuplane does not have: virtual networking between instances across hosts (overlays), storage shared by several
 * hosts (network disks and volumes), or host-to-host transfer of a volume's data (copies). So every change is a 503
 * `service_unavailable` whose `msg` says what is missing (the code main uses for a missing component, e.g. the blob
 * store of deployments), once the body is well formed (a malformed one is a 400 first); and the lists answer what is
 * true: none exist.
 */
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { TypedApp } from '../platform/http.js';
import { ApiError } from '../platform/errors.js';
import { ErrorReply } from '../platform/schemas.js';
import {
  AddNetworkDiskBody, CopyVolumeBody, CreateNetworkVolumeBody, CreateOverlayBody, DeleteOverlayBody, JoinOverlayBody, ListNetworkVolumeBody,
  NetworkDisksReply, NetworkVolumeOffersReply, OverlaysReply, UnlistNetworkVolumeBody,
} from './network-schemas.js';

export const MISSING = {
  overlay: 'overlay networks are not available on this gpuplane: they need virtual networking between instances on different hosts '
    + '(e.g. VXLAN or WireGuard), which it does not set up',
  networkDisk: 'network disks are not available on this gpuplane: they need storage shared by several hosts (NFS, Ceph or similar), '
    + 'which it does not manage',
  networkVolume: 'network volumes are not available on this gpuplane: they need storage shared by several hosts (NFS, Ceph or similar), '
    + 'which it does not manage',
  volumeCopy: 'copying a volume is not available on this gpuplane: it needs the volume\'s data moved from host to host, which its hosts do not do',
} as const;

const refuse = (what: keyof typeof MISSING) => async (): Promise<never> => {
  throw new ApiError('service_unavailable', MISSING[what]);
};
/** What the clients read on success; documented, never sent here (every call is 503). */
const NeverReply = Type.Object({ success: Type.Boolean(), msg: Type.String() }, { description: 'not sent by this server: the call is 503' });
const refused = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 503: ErrorReply };
const listed = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply };

export async function networkRoutes(app: TypedApp): Promise<void> {
  const tags = ['network'];
  // Overlays: Vast files them under user_read/user_write.
  app.get('/api/v0/overlay/', {
    config: { category: 'user_read' },
    schema: { tags, summary: 'Your overlay networks (none can exist here: no cross-host networking)', response: { 200: OverlaysReply, ...listed } },
  }, async () => []);
  app.post('/api/v0/overlay/', {
    config: { category: 'user_write' },
    schema: { tags, summary: 'Create an overlay network on a cluster: 503, no cross-host networking', body: CreateOverlayBody, response: { 200: NeverReply, ...refused } },
  }, refuse('overlay'));
  app.put('/api/v0/overlay/', {
    config: { category: 'user_write' },
    schema: { tags, summary: 'Join an instance to an overlay network: 503', body: JoinOverlayBody, response: { 200: NeverReply, ...refused } },
  }, refuse('overlay'));
  app.delete('/api/v0/overlay/', {
    config: { category: 'user_write' },
    schema: { tags, summary: 'Delete an overlay network: 503', body: DeleteOverlayBody, response: { 200: NeverReply, ...refused } },
  }, refuse('overlay'));

  app.get('/api/v0/network_disk/', {
    config: { category: 'machine_read' },
    schema: { tags, summary: 'Your network disks (none can exist here: no shared storage)', response: { 200: NetworkDisksReply, ...listed } },
  }, async () => ({ data: [] }));
  app.post('/api/v0/network_disk/', {
    config: { category: 'machine_write' },
    schema: { tags, summary: 'Attach a network disk to machines: 503, no shared storage', body: AddNetworkDiskBody, response: { 200: NeverReply, ...refused } },
  }, refuse('networkDisk'));

  app.post('/api/v0/network_volumes/search/', {
    config: { category: 'misc' },
    schema: {
      tags, summary: 'Search network volume offers (none can exist here: no shared storage)',
      response: { 200: NetworkVolumeOffersReply, ...listed },
    },
  }, async (request, reply: FastifyReply) => {
    const body = request.body;
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
      throw new ApiError('bad_request', 'body: must be a JSON object of filters');
    }
    // vast.py wants the Content-Type exactly `application/json`.
    return reply.type('application/json').send('{"offers":[]}');
  });
  app.put('/api/v0/network_volumes/', {
    config: { category: 'instance_write' },
    schema: { tags, summary: 'Create a network volume: 503, no shared storage', body: CreateNetworkVolumeBody, response: { 200: NeverReply, ...refused } },
  }, refuse('networkVolume'));
  app.post('/api/v0/network_volumes/', {
    // The host lists a network disk for rent: the host side, machine_write (Vast: instance_write).
    config: { category: 'machine_write' },
    schema: { tags, summary: 'List a network disk for rent as network volumes: 503', body: ListNetworkVolumeBody, response: { 200: NeverReply, ...refused } },
  }, refuse('networkVolume'));
  app.post('/api/v0/network_volumes/unlist/', {
    config: { category: 'machine_write' },
    schema: { tags, summary: 'Unlist a network volume offer: 503', body: UnlistNetworkVolumeBody, response: { 200: NeverReply, ...refused } },
  }, refuse('networkVolume'));

  app.post('/api/v0/volumes/copy/', {
    config: { category: 'instance_write' },
    schema: { tags: ['volumes'], summary: 'Copy a volume into a new one from a volume offer: 503, no host-to-host transfer', body: CopyVolumeBody, response: { 200: NeverReply, ...refused } },
  }, refuse('volumeCopy'));
}

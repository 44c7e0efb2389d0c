/** The account and the service's own metadata: current user, GPU names. */
import type { Static } from 'typebox';
import type { CurrentUserReply } from '../../users/users-types.js';
import type { GpuNamesReply as GpuNamesSchema } from '../../meta/meta-schemas.js';
import type { Transport } from '../transport.js';

export type GpuNamesReply = Static<typeof GpuNamesSchema>;

export function accountApi(t: Transport) {
  return {
    /** `GET /api/v0/users/current/`: the user object, with `api_key` echoing the key presented. */
    currentUser: () => t.request<Static<typeof CurrentUserReply>>('GET', '/api/v0/users/current/'),
    /** `GET /api/v0/gpu_names/unique/` (no key needed): the GPU model names on offer. */
    gpuNames: () => t.request<GpuNamesReply>('GET', '/api/v0/gpu_names/unique/'),
  };
}

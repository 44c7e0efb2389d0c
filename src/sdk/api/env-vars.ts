import type { Static } from 'typebox';
import type { Transport } from '../transport.js';
import type { EnvVarBody, EnvVarDeleteBody, EnvVarOkReply, EnvVarsReply } from '../../env-vars/env-vars-types.js';

/** Account environment variables (`/api/v0/secrets/`): injected into the account's new instances. */
export function envVarsApi(t: Transport) {
  return {
    /** Name → value, in clear. */
    list: async () => (await t.request<Static<typeof EnvVarsReply>>('GET', '/api/v0/secrets/')).secrets,
    create: (key: string, value: string) => t.request<Static<typeof EnvVarOkReply>>('POST', '/api/v0/secrets/', { body: { key, value } satisfies EnvVarBody }),
    update: (key: string, value: string) => t.request<Static<typeof EnvVarOkReply>>('PUT', '/api/v0/secrets/', { body: { key, value } satisfies EnvVarBody }),
    remove: (key: string) => t.request<Static<typeof EnvVarOkReply>>('DELETE', '/api/v0/secrets/', { body: { key } satisfies EnvVarDeleteBody }),
  };
}

/** Templates: search, create, edit (by hash_id), delete; and SSH keys. */
import type { Static } from 'typebox';
import type {
  CreateTemplateBody,
  DeleteTemplateBody,
  DeleteTemplateReply,
  TemplateReply,
  TemplatesReply,
  UpdateTemplateBody,
} from '../../templates/templates-types.js';
import type { SshKeyBody, SshKeyDeleteReply, SshKeyReply, SshKeysReply } from '../../ssh-keys/ssh-keys-types.js';
import type { Transport } from '../transport.js';

export function templatesApi(t: Transport) {
  return {
    /** `select_filters`: `{<field>: {<op>: value}}`. */
    search: (select_filters: Record<string, unknown> = {}) =>
      t.request<Static<typeof TemplatesReply>>('GET', '/api/v0/template/', { query: { select_cols: ['*'], select_filters } }),
    create: (body: CreateTemplateBody) => t.request<Static<typeof TemplateReply>>('POST', '/api/v0/template/', { body, idempotent: true }),
    update: (body: UpdateTemplateBody) => t.request<Static<typeof TemplateReply>>('PUT', '/api/v0/template/', { body }),
    remove: (body: DeleteTemplateBody) => t.request<Static<typeof DeleteTemplateReply>>('DELETE', '/api/v0/template/', { body }),
  };
}

export function sshKeysApi(t: Transport) {
  return {
    create: (ssh_key: string) => t.request<Static<typeof SshKeyReply>>('POST', '/api/v0/ssh/', { body: { ssh_key } satisfies SshKeyBody }),
    list: () => t.request<Static<typeof SshKeysReply>>('GET', '/api/v0/ssh/'),
    update: (id: number, ssh_key: string) => t.request<Static<typeof SshKeyReply>>('PUT', `/api/v0/ssh/${id}/`, { body: { ssh_key } }),
    remove: (id: number) => t.request<Static<typeof SshKeyDeleteReply>>('DELETE', `/api/v0/ssh/${id}/`, { body: {} }),
  };
}

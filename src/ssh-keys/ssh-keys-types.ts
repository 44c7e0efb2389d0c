import { Type, type Static } from 'typebox';

/** A registered SSH key as the API shows it. */
export const SshKeyObject = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  ssh_key: Type.String({ description: 'The OpenSSH public key line.' }),
  key: Type.String({ description: 'Alias of ssh_key, the name Vast.ai clients read.' }),
  created_at: Type.Number(),
  updated_at: Type.Number(),
});
export type SshKeyObject = Static<typeof SshKeyObject>;

export const SshKeyBody = Type.Object({ ssh_key: Type.String({ maxLength: 65_536 }) }, { additionalProperties: true });
export type SshKeyBody = Static<typeof SshKeyBody>;

export const SshKeyParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) });

export const SshKeyReply = Type.Object({ success: Type.Boolean(), key: SshKeyObject });
export const SshKeysReply = Type.Array(SshKeyObject);
export const SshKeyDeleteReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

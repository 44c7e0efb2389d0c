import { Type, type Static } from 'typebox';

/** Longest key line accepted (an 16384-bit RSA key is about 2.8 KB; comments are short). */
export const SSH_KEY_MAX_CHARS = 16_384;

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

/** Open: other keys are ignored, and owner and system columns (`user_id` …) refused (platform/validation.ts). */
export const SshKeyBody = Type.Object({ ssh_key: Type.String({ maxLength: 65_536 }) }, { additionalProperties: true });
export type SshKeyBody = Static<typeof SshKeyBody>;

/** `PUT /ssh/{id}/`: the vastai client repeats the key's id in the body (`{"id", "ssh_key"}`); it must be the path's. */
export const SshKeyUpdateBody = Type.Object(
  { ssh_key: Type.String({ maxLength: 65_536 }), id: Type.Optional(Type.Unsafe<number | null>({ type: ['integer', 'null'] })) },
  { additionalProperties: true },
);
export type SshKeyUpdateBody = Static<typeof SshKeyUpdateBody>;

export const SshKeyParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) });

export const SshKeyReply = Type.Object({ success: Type.Boolean(), key: SshKeyObject });
export const SshKeysReply = Type.Array(SshKeyObject);
export const SshKeyDeleteReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

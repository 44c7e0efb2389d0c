/** Issue 34 item 2: `POST /_emu/seed`'s body and reply (the body is checked by seed-document.ts, which names the path of a bad field). */
import { Type, type Static } from 'typebox';
import type { NewMachineBody } from '../emulator-schemas.js';

export const SeedBody = Type.Object(
  {},
  { additionalProperties: true, description: 'a seed document: fleet ("default" or "none"), machines, users (with api_keys, templates, ssh_keys, env_vars)' },
);

export const SeedReply = Type.Object({
  success: Type.Literal(true),
  users: Type.Array(Type.Object({ email: Type.String(), id: Type.Integer(), created: Type.Boolean(), api_keys_added: Type.Integer() })),
  machines: Type.Array(Type.Object({ machine_id: Type.Integer(), offer_ids: Type.Array(Type.Integer()) })),
  removed_machines: Type.Integer({ description: 'machines already there that fleet "none" took out of the offers' }),
  templates_added: Type.Integer(),
  ssh_keys_added: Type.Integer(),
  env_vars_added: Type.Integer(),
});
export type SeedReply = Static<typeof SeedReply>;

/** A seed document, as a seed file holds it (JSON). */
export interface SeedFile {
  /** `none`: only the seed's machines are offered (the machines already there leave the offers). Default `default`. */
  fleet?: 'default' | 'none';
  /** Each as `POST /_emu/machines`' body, plus `count` (repeat it) and `owner` (a seeded user's e-mail: its host). */
  machines?: (Omit<Static<typeof NewMachineBody>, 'owner_user_id'> & { count?: number; owner?: string })[];
  users?: {
    email: string;
    password?: string;
    full_name?: string;
    /** Dollars; default 100. */
    credit?: number;
    is_admin?: boolean;
    /** Keys the suite chose, 16-512 characters; stored hashed as every key. */
    api_keys?: { key: string; name?: string; permissions?: Record<string, unknown> }[];
    /** Each as `POST /api/v0/template/`'s body (name and image required). */
    templates?: Record<string, unknown>[];
    /** OpenSSH public key lines. */
    ssh_keys?: string[];
    /** Account environment variables, NAME: value. */
    env_vars?: Record<string, string>;
  }[];
}

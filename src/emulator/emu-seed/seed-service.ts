/**
 * Issue 34 items 2 and 6: applies a seed document (seed-document.ts) through the features' own services, loads the
 * seed file at start (GPUPLANE_EMU_SEED_FILE, before the server listens), runs the init scripts once it listens
 * (GPUPLANE_EMU_INIT_DIR, init-scripts.ts), and holds `/readyz` at 503 until all of that is done.
 *
 * Applying is idempotent where a second run can tell what the first made: a user whose e-mail exists is kept as it is
 * (its keys, templates, SSH keys and variables are still added when missing), a key that already authenticates its
 * user is skipped, a template of the same name, an SSH key already on the account and a variable already set are left
 * alone. Machines are added on every run (a machine has no name to recognise it by).
 */
import { readFile, stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Store, Tx } from '../../platform/db/connect.js';
import { ApiError } from '../../platform/errors.js';
import type { EmulatorLifecycle } from '../emulator-lifecycle.js';
import type { KeysService } from '../../keys/keys-service.js';
import type { UsersService } from '../../users/users-service.js';
import type { TemplatesService } from '../../templates/templates-service.js';
import type { SshKeysService } from '../../ssh-keys/ssh-keys-service.js';
import type { EnvVarsService } from '../../env-vars/env-vars-service.js';
import type { SimhostService } from '../simulated-hosts/simhost-service.js';
import type { MachinesService } from '../../machines/machines-service.js';
import type { OpsService } from '../../ops/ops-service.js';
import type { Principal } from '../../platform/auth.js';
import { parseSeedDocument, type SeedDocument, type SeedUser } from './seed-document.js';
import { runInitScripts } from './init-scripts.js';
import type { SeedReply } from './seed-schemas.js';

/** The starting credit of a seeded user that names none: the same as `POST /_emu/users` gives. */
export const SEED_DEFAULT_CREDIT = 100;

/**
 * A seed file that cannot be read or is not a valid seed, or an init folder that is not one: `gpuplane serve` reports
 * it as a configuration error (exit 2).
 */
export class SeedFileError extends Error {}

export interface SeedDeps {
  store: Store;
  log: Logger;
  config: Pick<Config, 'emuSeedFile' | 'emuInitDir' | 'emuState' | 'bootstrapApiKey'>;
  users: Pick<UsersService, 'createUser'>;
  /** The account with this e-mail (the users store's lookup, as the root hands it out). */
  findUserByEmail(email: string): Promise<{ id: number } | undefined>;
  keysService: Pick<KeysService, 'create'>;
  /** Who a key authenticates, if anyone (auth.resolve). */
  resolveKey(secret: string): Promise<Pick<Principal, 'user'> | null>;
  recordCredit?: (tx: Tx, userId: number, amountMicro: number, description: string) => Promise<void>;
  simhost: Pick<SimhostService, 'addMachine'>;
  fleet: Pick<MachinesService, 'hosting'>;
  templates: Pick<TemplatesService, 'create' | 'listOwn'>;
  sshKeys: Pick<SshKeysService, 'create' | 'list'>;
  envVars: Pick<EnvVarsService, 'create' | 'list'>;
  ops: Pick<OpsService, 'holdReadiness' | 'setReadyDetail'>;
}

export type SeedResult = SeedReply;

export function emuSeedFactory(deps: SeedDeps) {
  const { store, log, config } = deps;

  async function applyUser(u: SeedUser, path: string, result: SeedResult): Promise<void> {
    // Read before the transaction: on SQLite a read outside it would wait for it (one connection).
    const existing = await deps.findUserByEmail(u.email);
    const owners: (Pick<Principal, 'user'> | null)[] = [];
    for (const [j, k] of u.api_keys.entries()) {
      const owner = await deps.resolveKey(k.key);
      if (owner && owner.user.id !== existing?.id) throw new ApiError('conflict', `${path}.api_keys[${j}].key: already the key of another user`);
      owners.push(owner);
    }
    const { user, created, keysAdded } = await store.db.transaction().execute(async (tx) => {
      let row = existing;
      if (!row) {
        const made = await deps.users.createUser(
          { email: u.email, password: u.password, full_name: u.full_name, is_admin: u.is_admin, credit: u.credit ?? SEED_DEFAULT_CREDIT, email_verified: true },
          tx,
        );
        if (made.credit_micro > 0) await deps.recordCredit?.(tx, made.id, made.credit_micro, 'starting credit');
        row = made;
      }
      let added = 0;
      for (const [j, k] of u.api_keys.entries()) {
        // Already this user's key: a second run of the same seed.
        if (owners[j]) continue;
        try {
          await deps.keysService.create({ user_id: row.id, kind: 'user', name: k.name ?? 'seed', permissions: k.permissions ?? null, secret: k.key }, tx);
        } catch (err) {
          // The unique index on the key's hash: a revoked key with this secret.
          if (err instanceof ApiError) throw err;
          throw new ApiError('conflict', `${path}.api_keys[${j}].key: this key was used before (revoked); choose another`);
        }
        added++;
      }
      return { user: row, created: !existing, keysAdded: added };
    });
    result.users.push({ email: u.email, id: user.id, created, api_keys_added: keysAdded });
    const scope = { userId: user.id, teamId: null };

    if (u.templates.length) {
      const have = new Set((await deps.templates.listOwn(scope, user.id, 'me')).templates.map((t) => t.name));
      for (const t of u.templates) {
        if (have.has(String(t.name))) continue;
        await withPath(`${path}.templates`, () => deps.templates.create(scope, t as never));
        have.add(String(t.name));
        result.templates_added++;
      }
    }
    for (const [i, line] of u.ssh_keys.entries()) {
      try {
        await deps.sshKeys.create(user.id, line);
        result.ssh_keys_added++;
      } catch (err) {
        // Already on the account: a second run of the same seed.
        if (err instanceof ApiError && err.code === 'conflict') continue;
        throw prefixed(err, `${path}.ssh_keys[${i}]`);
      }
    }
    const names = Object.keys(u.env_vars);
    if (names.length) {
      const existing = await deps.envVars.list(scope);
      const have = new Set(Object.keys(existing.secrets ?? {}));
      for (const name of names) {
        if (have.has(name)) continue;
        await withPath(`${path}.env_vars.${name}`, () => deps.envVars.create(scope, { key: name, value: u.env_vars[name] }));
        result.env_vars_added++;
      }
    }
  }

  /** Applies a checked seed document, in order: users (and theirs), then the fleet. */
  async function apply(doc: SeedDocument): Promise<SeedResult> {
    const result: SeedResult = { success: true, users: [], machines: [], removed_machines: 0, templates_added: 0, ssh_keys_added: 0, env_vars_added: 0 };
    for (const [i, u] of doc.users.entries()) await applyUser(u, `users[${i}]`, result);
    if (doc.fleet === 'none') {
      // The offered fleet becomes exactly this seed's machines (applied again: the new ones). Idle machines leave every
      // list, as force_delete leaves them; one that holds an instance (a seed applied to a running world) is unlisted
      // instead: nothing new rents it, and what runs there keeps running.
      const machines = await deps.fleet.hosting.machinesOf('all');
      await store.db.transaction().execute(async (tx) => {
        for (const m of machines) {
          const busy = m.gpus.some((g) => g.instance_id !== null);
          if (await (busy ? deps.fleet.hosting.unlist(tx, m.record.id) : deps.fleet.hosting.markDeleted(tx, m.record.id))) result.removed_machines++;
        }
      });
    }
    const ids = new Map(result.users.map((u) => [u.email.toLowerCase(), u.id]));
    for (const m of doc.machines) {
      let owner: number | undefined;
      if (m.owner !== undefined) {
        // The document's check made sure it is one of its users.
        owner = ids.get(m.owner.toLowerCase())!;
      }
      for (let n = 0; n < m.count; n++) {
        result.machines.push(await deps.simhost.addMachine({ ...m.body, ...(owner === undefined ? {} : { owner_user_id: owner }) }));
      }
    }
    return result;
  }

  /** Reads and checks the seed file; a SeedFileError names the file (and the field) otherwise. */
  async function readSeedFile(file: string): Promise<SeedDocument> {
    const where = `GPUPLANE_EMU_SEED_FILE (--emu-seed-file) ${file}`;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new SeedFileError(`${where}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new SeedFileError(`${where}: not JSON (${(err as Error).message})`);
    }
    try {
      return parseSeedDocument(doc);
    } catch (err) {
      throw new SeedFileError(`${where}: ${(err as Error).message}`);
    }
  }

  return {
    /** `POST /_emu/seed`. */
    async seed(body: unknown): Promise<SeedResult> {
      return apply(parseSeedDocument(body));
    },

    /** Registers the start-up hooks: the seed file before listening, the init scripts after, readiness held till done. */
    register(lifecycle: EmulatorLifecycle): void {
      if (!config.emuSeedFile && !config.emuInitDir && !config.emuState) return;
      const release = deps.ops.holdReadiness('the emulator is loading its state, seed file or running its init scripts');
      lifecycle.add({
        name: 'seed',
        async beforeListen() {
          if (config.emuInitDir) {
            // Said at start, not found out once the server listens.
            const isDir = await stat(config.emuInitDir).then((st) => st.isDirectory(), () => false);
            if (!isDir) throw new SeedFileError(`GPUPLANE_EMU_INIT_DIR (--emu-init-dir) ${config.emuInitDir}: not a folder`);
          }
          if (!config.emuSeedFile) return;
          const doc = await readSeedFile(config.emuSeedFile);
          try {
            const r = await apply(doc);
            log.info({ file: config.emuSeedFile, users: r.users.length, machines: r.machines.length, removed: r.removed_machines }, 'emulator seeded from the seed file');
          } catch (err) {
            if (err instanceof ApiError) throw new SeedFileError(`GPUPLANE_EMU_SEED_FILE (--emu-seed-file) ${config.emuSeedFile}: ${err.message}`);
            throw err;
          }
        },
        async afterListen({ url }) {
          if (!config.emuInitDir) {
            release();
            return;
          }
          // Not awaited: the listening line comes at once; readiness waits for the scripts.
          void runInitScripts({ dir: config.emuInitDir, url, apiKey: config.bootstrapApiKey, log })
            .then((r) => deps.ops.setReadyDetail('emulator_init', r))
            .catch((err) => {
              log.error({ err, dir: config.emuInitDir }, 'emulator init scripts: cannot run them');
              deps.ops.setReadyDetail('emulator_init', { scripts: 0, failed: [{ script: String(config.emuInitDir), exit_code: null }] });
            })
            .finally(release);
        },
      });
    },
  };
}

/** A feature's 400 or 409 for one seeded thing, its message prefixed with where in the seed it came from. */
function prefixed(err: unknown, path: string): unknown {
  if (err instanceof ApiError) return new ApiError(err.code, `${path}: ${err.message}`);
  return err;
}

async function withPath<T>(path: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw prefixed(err, path);
  }
}

export type EmuSeedService = ReturnType<typeof emuSeedFactory>;

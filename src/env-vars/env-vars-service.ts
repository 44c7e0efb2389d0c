import type { Clock } from '../platform/clock.js';
import type { Scope } from '../platform/auth.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Db } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import type { EnvVarsStore } from './env-vars-store.js';
import { ENV_VARS_MAX, type EnvVarBody, type EnvVarOkReply, type EnvVarsReply } from './env-vars-types.js';

export interface EnvVarsServiceDeps {
  db: Db;
  envVars: EnvVarsStore;
  clock: Clock;
  secretBox: SecretBox;
}

/** A team's variables are the team's, shared by its members; otherwise the user's own. */
export const ownerOf = (scope: Scope) => (scope.teamId !== null ? `team:${scope.teamId}` : `user:${scope.userId}`);

const notFound = (name: string) => new ApiError('not_found', `environment variable ${name} not found; create it with create env-var`);

/** Account environment variables (`/api/v0/secrets/`), sealed at rest, injected into their owner's new instances. */
export function envVarsServiceFactory({ db, envVars, clock, secretBox }: EnvVarsServiceDeps) {
  /** The variables in clear. A value sealed under another secret key cannot be read: it is left out, not guessed. */
  async function read(scope: Scope): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const row of await envVars.list(ownerOf(scope))) {
      const value = secretBox.open(row.value_sealed);
      if (value !== null) out[row.name] = value;
    }
    return out;
  }

  return {
    async list(scope: Scope): Promise<EnvVarsReply> {
      return { success: true, secrets: await read(scope) };
    },

    async create(scope: Scope, body: EnvVarBody): Promise<EnvVarOkReply> {
      const owner = ownerOf(scope);
      await db.transaction().execute(async (tx) => {
        // Counted inside the transaction; a race past the cap can add at most the racing few, never break anything.
        if ((await envVars.count(owner, tx)) >= ENV_VARS_MAX) {
          throw badRequest(`an account can hold at most ${ENV_VARS_MAX} environment variables; delete one first`);
        }
        const added = await envVars.insert({ owner, user_id: scope.userId, name: body.key, value_sealed: secretBox.seal(body.value), now: clock.now() }, tx);
        if (!added) throw new ApiError('conflict', `environment variable ${body.key} already exists; change it with update env-var`);
      });
      return { success: true, msg: `Environment variable ${body.key} created.` };
    },

    async update(scope: Scope, body: EnvVarBody): Promise<EnvVarOkReply> {
      const changed = await envVars.update(ownerOf(scope), body.key, { user_id: scope.userId, value_sealed: secretBox.seal(body.value), now: clock.now() });
      if (!changed) throw notFound(body.key);
      return { success: true, msg: `Environment variable ${body.key} updated.` };
    },

    async remove(scope: Scope, name: string): Promise<EnvVarOkReply> {
      if (!(await envVars.remove(ownerOf(scope), name))) throw notFound(name);
      return { success: true, msg: `Environment variable ${name} deleted.` };
    },

    /** For the runtime: the variables a new instance of this owner starts with (the instance's own env wins). */
    environmentOf: read,
  };
}

export type EnvVarsService = ReturnType<typeof envVarsServiceFactory>;

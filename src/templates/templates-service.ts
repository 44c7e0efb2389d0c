import type { Scope } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Db, DialectName, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import type { Random } from '../platform/random.js';
import type { TemplateForCreate } from './templates-contract.js';
import { templateHashId } from './templates-hash.js';
import { applyBody, defaultContent, type TemplateContent } from './templates-input.js';
import { parseTemplateFilters } from './templates-search.js';
import type { TemplateRow, TemplatesStore } from './templates-store.js';
import type { CreateTemplateBody, DeleteTemplateBody, SearchTemplatesQuery, TemplateObject, UpdateTemplateBody } from './templates-types.js';

/** Most templates one search returns. */
export const TEMPLATE_SEARCH_LIMIT_MAX = 1000;

export interface TemplatesServiceDeps {
  db: Db;
  dialect: DialectName;
  templates: TemplatesStore;
  clock: Clock;
  random: Random;
  secretBox: SecretBox;
}

const templateNotFound = (ref: string | number) => new ApiError('not_found', `template ${ref} not found`);

function contentOf(row: TemplateRow): TemplateContent {
  return {
    name: row.name, image: row.image, tag: row.tag, desc: row.desc, readme: row.readme,
    readme_visible: row.readme_visible === 1, env: row.env, onstart: row.onstart, runtype: row.runtype,
    args_str: row.args_str, ssh_direct: row.ssh_direct === 1, use_ssh: row.use_ssh === 1, jup_direct: row.jup_direct === 1,
    jupyter_dir: row.jupyter_dir, use_jupyter_lab: row.use_jupyter_lab === 1, docker_login_repo: row.docker_login_repo,
    docker_login_user: row.docker_login_user, href: row.href, repo: row.repo,
    extra_filters: JSON.parse(row.extra_filters) as Record<string, unknown>,
    recommended_disk_space: row.recommended_disk_space, private: row.private === 1,
    volume_info: row.volume_info === null ? null : (JSON.parse(row.volume_info) as Record<string, unknown>),
  };
}

/** Content as columns: booleans to 0/1, objects to JSON text. `default_tag` follows the saved tag. */
function columnsOf(c: TemplateContent) {
  return {
    ...c,
    readme_visible: c.readme_visible ? 1 : 0, ssh_direct: c.ssh_direct ? 1 : 0, use_ssh: c.use_ssh ? 1 : 0,
    jup_direct: c.jup_direct ? 1 : 0, use_jupyter_lab: c.use_jupyter_lab ? 1 : 0, private: c.private ? 1 : 0,
    extra_filters: JSON.stringify(c.extra_filters),
    volume_info: c.volume_info === null ? null : JSON.stringify(c.volume_info),
    default_tag: c.tag,
  };
}

export function templatesServiceFactory({ db, dialect, templates, clock, random, secretBox }: TemplatesServiceDeps) {
  const seal = (pass: string): string => (pass === '' ? '' : secretBox.seal(pass));
  function openPass(row: TemplateRow): string {
    if (row.docker_login_pass_sealed === '') return '';
    const plain = secretBox.open(row.docker_login_pass_sealed);
    // Sealed with another GPUPLANE_SECRET_KEY: a fault of the deployment, not of the caller.
    if (plain === null) throw new ApiError('internal_error', 'template registry credentials cannot be decrypted');
    return plain;
  }

  /** The API view. The registry password is shown to the owner only; everyone else sees it empty. */
  function toObject(row: TemplateRow, scope: Scope): TemplateObject {
    const c = contentOf(row);
    return {
      id: row.id, hash_id: row.hash_id, ...c,
      docker_login_pass: templates.ownedBy(row, scope) ? openPass(row) : '',
      creator_id: row.user_id, created_at: row.created_at, count_created: row.count_created,
      default_tag: row.default_tag, recent_create_date: row.recent_create_date, recommended: row.recommended === 1,
    };
  }

  /** A template the scope may see: its own, or a public one. Private templates of others do not exist for it. */
  function visible(row: TemplateRow | undefined, scope: Scope): row is TemplateRow {
    return row !== undefined && (row.private === 0 || templates.ownedBy(row, scope));
  }

  /**
   * For instance creation: the template `hashId` names, if the scope may use it (its own, or a public one), with
   * the registry password decrypted so it can carry over (spec rule 4). `owned` says whether the caller owns it:
   * when false, the instance may use the password to pull but must never show it to the caller.
   * @throws ApiError not_found for an unknown hash_id, an edited-away old hash_id or someone else's private template.
   */
  async function getForCreate(scope: Scope, hashId: string, tx: Tx = db): Promise<TemplateForCreate & { owned: boolean }> {
    const row = await templates.findByHash(hashId, tx);
    if (!visible(row, scope)) throw templateNotFound(hashId);
    const c = contentOf(row);
    return { id: row.id, hash_id: row.hash_id, ...c, docker_login_pass: openPass(row), owned: templates.ownedBy(row, scope) };
  }

  return {
    toObject,

    async create(scope: Scope, body: CreateTemplateBody): Promise<{ success: true; template: TemplateObject }> {
      if (body.name === undefined || body.name === null) throw badRequest('body.name is required');
      if (body.image === undefined || body.image === null) throw badRequest('body.image is required');
      const content = applyBody(defaultContent(), body);
      const row = await db.transaction().execute(async (tx) => {
        const inserted = await templates.insert(
          {
            ...columnsOf(content),
            // The real hash needs the id; a random placeholder keeps the unique index happy until then.
            hash_id: `pending-${random.bytes(16).toString('hex')}`,
            user_id: scope.userId,
            team_id: scope.teamId,
            docker_login_pass_sealed: seal(body.docker_login_pass ?? ''),
            created_at: clock.now(),
            version: 1,
            recommended: 0,
            count_created: 0,
            recent_create_date: null,
          },
          tx,
        );
        return templates.update(inserted.id, { hash_id: templateHashId(inserted.id, 1, content) }, tx);
      });
      return { success: true, template: toObject(row, scope) };
    },

    /** Edit by hash_id (spec): only the fields given change; the template gets a new hash_id and the old one is gone. */
    async update(scope: Scope, body: UpdateTemplateBody): Promise<{ success: true; template: TemplateObject }> {
      const row = await db.transaction().execute(async (tx) => {
        const current = await templates.findByHashForUpdate(body.hash_id, dialect, tx);
        if (!current || !templates.ownedBy(current, scope)) throw templateNotFound(body.hash_id);
        const content = applyBody(contentOf(current), body);
        const version = current.version + 1;
        return templates.update(
          current.id,
          {
            ...columnsOf(content),
            hash_id: templateHashId(current.id, version, content),
            version,
            ...(body.docker_login_pass !== undefined && body.docker_login_pass !== null
              ? { docker_login_pass_sealed: seal(body.docker_login_pass) }
              : {}),
          },
          tx,
        );
      });
      return { success: true, template: toObject(row, scope) };
    },

    /** Delete by numeric id, or by hash_id (contract §6). Someone else's template is 404. */
    async remove(scope: Scope, body: DeleteTemplateBody | undefined): Promise<{ success: true; msg: string }> {
      const id = body?.template_id;
      const hashId = body?.hash_id;
      if (id === undefined && hashId === undefined) throw badRequest('body.template_id (the numeric id) or body.hash_id is required');
      if (id !== undefined && hashId !== undefined) throw badRequest('give body.template_id or body.hash_id, not both');
      const ref = id ?? hashId!;
      return db.transaction().execute(async (tx) => {
        const row = id !== undefined ? await templates.findById(id, tx) : await templates.findByHash(hashId!, tx);
        if (!row || !templates.ownedBy(row, scope)) throw templateNotFound(ref);
        await templates.remove(row.id, tx);
        return { success: true as const, msg: `template ${row.id} deleted` };
      });
    },

    /**
     * `GET /api/v0/users/{id}/templates/`: the caller's own templates (in a team context, the team's), private ones
     * included, newest first, in the reply search gives (`{success, templates}`, what the clients read). `ref` names the
     * caller (`0`, `me`, `current` or their user id, `callerId`); another user's id is refused.
     */
    async listOwn(scope: Scope, callerId: number, ref: string): Promise<{ success: true; templates: TemplateObject[] }> {
      const self = ref === 'me' || ref === 'current' || Number(ref) === 0 || Number(ref) === callerId;
      if (!self) throw new ApiError('permission_denied', `you can list only your own templates (user id ${callerId}, or 0, me or current)`);
      const rows = await templates.listOwned(scope, TEMPLATE_SEARCH_LIMIT_MAX);
      return { success: true, templates: rows.map((r) => toObject(r, scope)) };
    },

    /** Structured search over public templates and the caller's own (spec: Templates, Search). */
    async search(scope: Scope, query: SearchTemplatesQuery): Promise<{ success: true; templates: TemplateObject[] }> {
      const filters = parseTemplateFilters(query.select_filters);
      const rows = await templates.search(scope, filters, Math.min(query.limit ?? TEMPLATE_SEARCH_LIMIT_MAX, TEMPLATE_SEARCH_LIMIT_MAX));
      return { success: true, templates: rows.map((r) => toObject(r, scope)) };
    },

    /**
     * For instance creation: the template `hashId` names, if the scope may use it (its own, or a public one), with
     * the registry password decrypted so it can carry over (spec rule 4). `owned` says whether the caller owns it:
     * when false, the instance may use the password to pull but must never show it to the caller.
     * @throws ApiError not_found for an unknown hash_id, an edited-away old hash_id or someone else's private template.
     */
    getForCreate,

    /** An instance was created from the template: `count_created` + 1 and `recent_create_date` = now. */
    async recordUse(tx: Tx, templateId: number, now: number): Promise<void> {
      await templates.recordUse(templateId, now, tx);
    },

    /**
     * The same two calls in the shape `instances/instances-ports.ts` (TemplatesPort) declares: hash first, and
     * `undefined` rather than a 404 for a template the scope may not use.
     */
    instancesPort: {
      async getForCreate(hashId: string, scope: Scope, tx: Tx = db): Promise<(TemplateForCreate & { owned: boolean }) | undefined> {
        try {
          return await getForCreate(scope, hashId, tx);
        } catch (e) {
          if (e instanceof ApiError && e.code === 'not_found') return undefined;
          throw e;
        }
      },
      recordUse: (templateId: number, at: number, tx: Tx = db) => templates.recordUse(templateId, at, tx),
      /** The same by numeric id (`update instance --template_id`). */
      async getForCreateById(id: number, scope: Scope, tx: Tx = db): Promise<(TemplateForCreate & { owned: boolean }) | undefined> {
        const row = await templates.findById(id, tx);
        return visible(row, scope) ? getForCreate(scope, row.hash_id, tx) : undefined;
      },
    },
  };
}

export type TemplatesService = ReturnType<typeof templatesServiceFactory>;

/** Templates (`search/create/update/delete template`) and SSH keys (`create/show/update/delete ssh-key`). */
import { existsSync, readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { action, intArg, UsageError, type Ctx } from '../context.js';
import { DEFAULT_OFFER_QUERY, OFFER_QUERY, fieldsHelp, parseOfferQuery, QueryError, type FieldDef, type QueryFields } from '../offer-query.js';
import { renderRecord, columnsOption, utc, yesNo } from '../output.js';
import type { Groups } from '../program.js';

/** Template search fields (spec: Template, and its additional search fields). */
const TEMPLATE_FIELDS: Record<string, FieldDef> = {
  id: { type: 'int', desc: 'template id' },
  hash_id: { type: 'string', desc: 'content hash (changes on every edit)' },
  name: { type: 'string', desc: 'name' },
  image: { type: 'string', desc: 'Docker image' },
  tag: { type: 'string', desc: 'image tag' },
  default_tag: { type: 'string', desc: 'image default tag' },
  docker_login_repo: { type: 'string', desc: 'image registry' },
  creator_id: { type: 'int', desc: 'creator' },
  created_at: { type: 'float', unit: 's', desc: 'creation time, Unix seconds' },
  recent_create_date: { type: 'float', unit: 's', desc: 'last instance created from it, Unix seconds' },
  count_created: { type: 'int', desc: 'instances created from it' },
  recommended_disk_space: { type: 'float', unit: 'GB', desc: 'recommended disk' },
  recommended: { type: 'bool', desc: 'on the recommended list' },
  private: { type: 'bool', desc: 'private template' },
  runtype: { type: 'string', desc: 'ssh, jupyter or args' },
  ssh_direct: { type: 'bool', desc: 'direct SSH' },
  use_ssh: { type: 'bool', desc: 'SSH access' },
  jup_direct: { type: 'bool', desc: 'direct Jupyter' },
};
const TEMPLATE_QUERY: QueryFields = { fields: TEMPLATE_FIELDS, aliases: {}, command: 'search templates' };

const templateColumns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'hash_id', header: 'Hash' },
  { key: 'name', header: 'Name' },
  { key: 'image', header: 'Image' },
  { key: 'tag', header: 'Tag' },
  { key: 'runtype', header: 'Runtype' },
  { key: 'recommended_disk_space', header: 'Disk GB', align: 'right' as const },
  { key: 'private', header: 'Private', fmt: yesNo },
];

function query<T>(text: string, q: QueryFields, base = {}): T {
  try {
    return parseOfferQuery(text, base, q) as T;
  } catch (err) {
    if (err instanceof QueryError) throw new UsageError(err.message);
    throw err;
  }
}

interface TemplateOpts {
  name?: string;
  image?: string;
  image_tag?: string;
  href?: string;
  repo?: string;
  login?: string;
  env?: string;
  ssh?: boolean;
  jupyter?: boolean;
  direct?: boolean;
  jupyterDir?: string;
  jupyterLab?: boolean;
  onstartCmd?: string;
  args?: string;
  search_params?: string;
  default: boolean;
  disk_space?: number;
  readme?: string;
  hideReadme?: boolean;
  desc?: string;
  public?: boolean;
}

function templateOptions(cmd: Command): Command {
  return cmd
    .option('--name <name>', 'template name')
    .option('--image <image>', 'Docker image')
    .option('--image_tag <tag>', 'image tag (default latest)')
    .option('--href <url>', 'link to the image documentation')
    .option('--repo <repo>', 'repository')
    .option('--login <args>', 'registry login: "-u USER -p TOKEN registry.host"')
    .option('--env <flags>', 'Docker options: "-e NAME=VALUE -p 8080:8080"')
    .option('--ssh', 'launch as an SSH instance')
    .option('--jupyter', 'launch as a Jupyter instance (includes SSH)')
    .option('--direct', 'direct (not proxied) SSH/Jupyter connections')
    .option('--jupyter-dir <dir>', 'directory to start Jupyter from')
    .option('--jupyter-lab', 'JupyterLab instead of Notebook')
    .option('--onstart-cmd <script>', 'shell commands run at start')
    .option('--args <args>', 'arguments for the image ENTRYPOINT (runtype args)')
    .option('--search_params <query>', 'default offer filters, in the search offers query language')
    .option('-n, --no-default', 'no default offer filters (verified, rentable …)')
    .option('--disk_space <GB>', 'recommended disk in GB', (v) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('--disk_space must be a positive number of GB.');
      return n;
    })
    .option('--readme <text>', 'readme')
    .option('--hide-readme', 'hide the readme from other users')
    .option('--desc <text>', 'description')
    .option('--public', 'make the template public');
}

/** Only the fields given (an update changes nothing else), as the spec's edit asks. */
function templateBody(o: TemplateOpts, forCreate: boolean): Record<string, unknown> {
  const b: Record<string, unknown> = {};
  const set = (k: string, v: unknown) => v !== undefined && (b[k] = v);
  set('name', o.name);
  set('image', o.image);
  set('tag', o.image_tag);
  set('href', o.href);
  set('repo', o.repo);
  set('env', o.env);
  set('onstart', o.onstartCmd);
  set('args_str', o.args);
  set('jupyter_dir', o.jupyterDir);
  set('use_jupyter_lab', o.jupyterLab);
  set('readme', o.readme);
  set('desc', o.desc);
  set('recommended_disk_space', o.disk_space);
  if (o.hideReadme) b.readme_visible = false;
  if (o.ssh || o.jupyter || forCreate) {
    b.runtype = o.jupyter ? 'jupyter' : o.ssh ? 'ssh' : 'args';
    b.use_ssh = Boolean(o.ssh || o.jupyter);
    b.ssh_direct = Boolean(o.ssh && o.direct);
    b.jup_direct = Boolean(o.jupyter && o.direct);
  }
  if (o.public !== undefined || forCreate) b.private = !o.public;
  if (o.login !== undefined) {
    // "-u USER -p TOKEN host": the credentials carry over to instances (spec: create rule 4).
    const m = /^(?:-u\s+(\S+)\s+)?(?:-p\s+(\S+)\s+)?(\S+)$/.exec(o.login.trim());
    if (!m) throw new UsageError('--login must look like "-u USER -p TOKEN registry.host"');
    [b.docker_login_user, b.docker_login_pass, b.docker_login_repo] = [m[1] ?? '', m[2] ?? '', m[3]];
  } else if (forCreate) {
    b.docker_login_repo = b.docker_login_user = b.docker_login_pass = '';
  }
  if (o.search_params !== undefined || (forCreate && o.default)) {
    b.extra_filters = query(o.search_params ?? '', OFFER_QUERY, o.default ? DEFAULT_OFFER_QUERY() : {});
  }
  return b;
}

const printTemplate = (ctx: Ctx, reply: { template: Record<string, unknown> }, verb: string, t = reply.template) =>
  ctx.out.print(reply, () => `${verb} template ${t.id} (hash_id ${t.hash_id})\n${renderRecord(t, ['id', 'hash_id', 'name', 'image', 'tag', 'runtype', 'env', 'onstart', 'recommended_disk_space', 'private'].map((key) => ({ key })))}`);

const SSH_KEY_HELP = 'an OpenSSH public key, or the path of a .pub file';

/** A public key given inline or as a file; a private key is refused before it leaves the machine. */
function readPublicKey(arg: string): string {
  const text = existsSync(arg) ? readFileSync(arg, 'utf8').trim() : arg.trim();
  if (text.includes('PRIVATE KEY')) throw new UsageError('that is a private SSH key: give the public one (the .pub file)');
  if (!/^(ssh-|ecdsa-|sk-)/.test(text)) throw new UsageError('that does not look like an SSH public key (ssh-ed25519 AAAA…, ssh-rsa AAAA…)');
  return text;
}

export function registerTemplates(g: Groups): void {
  g.search
    .command('templates')
    .description('search templates with a query (same syntax as search offers)')
    .argument('[query...]', 'comparisons, e.g. count_created>100 name=PyTorch')
    .addOption(columnsOption(templateColumns))
    .addHelpText('after', `\nFields:\n${fieldsHelp(TEMPLATE_FIELDS)}\n\nExample:\n  gpuplane search templates 'use_ssh=true recommended_disk_space<=20'`)
    .action(
      action(async (ctx, words: string[]) => {
        const r = await ctx.client.templates.search(query(words.join(' '), TEMPLATE_QUERY));
        ctx.out.print(r.templates, () => (r.templates.length ? ctx.out.table(r.templates, templateColumns) : 'no templates match'));
      }),
    );

  templateOptions(g.create.command('template'))
    .description('create a template (name and image required)')
    .addHelpText('after', `\nExample:\n  gpuplane create template --name pytorch --image pytorch/pytorch --image_tag latest --ssh --direct --disk_space 20 --search_params 'gpu_ram>=23 num_gpus=1'`)
    .action(
      action(async (ctx, o: TemplateOpts) => {
        if (!o.name || !o.image) throw new UsageError('create template needs --name and --image');
        const r = await ctx.client.templates.create(templateBody(o, true));
        printTemplate(ctx, r, 'created');
      }),
    );

  templateOptions(g.update.command('template'))
    .description('change a template by its hash_id; only the options given change, and the hash_id changes')
    .argument('<hash_id>', 'the template’s current hash_id')
    .addHelpText('after', '\nExample:\n  gpuplane update template 4f2a9c… --desc "PyTorch 2.4 with CUDA 12" --disk_space 32')
    .action(
      action(async (ctx, hash_id: string, o: TemplateOpts) => {
        const body = templateBody(o, false);
        if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give at least one option');
        const r = await ctx.client.templates.update({ hash_id, ...body });
        printTemplate(ctx, r, 'updated');
      }),
    );

  g.delete
    .command('template')
    .description('delete a template by its numeric id or its hash_id')
    .option('--template-id <id>', 'numeric template id', intArg('--template-id'))
    .option('--hash-id <hash>', 'template hash_id')
    .addHelpText('after', '\nExample:\n  gpuplane delete template --template-id 12')
    .action(
      action(async (ctx, o: { templateId?: number; hashId?: string }) => {
        if ((o.templateId === undefined) === (o.hashId === undefined)) throw new UsageError('give exactly one of --template-id and --hash-id');
        const r = await ctx.client.templates.remove(o.templateId !== undefined ? { template_id: o.templateId } : { hash_id: o.hashId! });
        ctx.out.print(r, () => r.msg);
      }),
    );

  const sshColumns = [
    { key: 'id', header: 'ID', align: 'right' as const },
    { key: 'ssh_key', header: 'Key', fmt: (v: string) => (v.length > 60 ? `${v.slice(0, 40)}…${v.slice(-16)}` : v) },
    { key: 'created_at', header: 'Created (UTC)', fmt: utc },
  ];
  g.create
    .command('ssh-key')
    .description('register an SSH public key on your account (needed before creating a VM instance)')
    .argument('<key>', SSH_KEY_HELP)
    .addHelpText('after', '\nExample:\n  gpuplane create ssh-key ~/.ssh/id_ed25519.pub')
    .action(
      action(async (ctx, key: string) => {
        const r = await ctx.client.sshKeys.create(readPublicKey(key));
        ctx.out.print(r, () => `created ssh-key ${r.key.id}`);
      }),
    );
  g.show
    .command('ssh-keys')
    .description('list your SSH keys')
    .addOption(columnsOption(sshColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show ssh-keys')
    .action(
      action(async (ctx) => {
        const keys = await ctx.client.sshKeys.list();
        ctx.out.print(keys, () => (keys.length ? ctx.out.table(keys as unknown as Record<string, unknown>[], sshColumns) : 'no SSH keys'));
      }),
    );
  g.update
    .command('ssh-key')
    .description('replace an SSH key')
    .argument('<id>', 'SSH key id', intArg('id'))
    .argument('<key>', SSH_KEY_HELP)
    .addHelpText('after', '\nExample:\n  gpuplane update ssh-key 3 ~/.ssh/id_ed25519.pub')
    .action(
      action(async (ctx, id: number, key: string) => {
        const r = await ctx.client.sshKeys.update(id, readPublicKey(key));
        ctx.out.print(r, () => `updated ssh-key ${r.key.id}`);
      }),
    );
  g.delete
    .command('ssh-key')
    .description('delete an SSH key')
    .argument('<id>', 'SSH key id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete ssh-key 3')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.sshKeys.remove(id);
        ctx.out.print(r, () => r.msg);
      }),
    );
}

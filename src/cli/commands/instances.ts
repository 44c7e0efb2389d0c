/**
 * Instances in the vastai client's vocabulary: `create instance`, `show instances`/`show instance`, `start`/`stop`/
 * `destroy`/`label instance`, `change bid`, `logs`, `ssh-url`, `attach`/`detach ssh`, and `wait instance`, whose
 * live status line shows the state and the elapsed time and which exits non-zero on failure or timeout.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Instance } from '../../sdk/api/instances.js';
import { DEFAULT_WAIT_TIMEOUT_S } from '../../sdk/wait.js';
import { action, EXIT, intArg, InterruptedError, numberArg, UsageError, type Ctx } from '../context.js';
import { hinted } from '../hints.js';
import { containerOptions, parseEnv, runtypeOf } from '../instance-args.js';
import { columnsOption, counted, fixed, renderRecord, utc, type Column } from '../output.js';
import { statusLine } from '../status-line.js';
import { encodeOnstart } from '../onstart.js';

const MB_PER_GB = 1000;
/** How an instance whose `actual_status` is still null reads (spec: States and transitions, "being provisioned"). */
const PROVISIONING = 'provisioning';
const PERCENT = 100;

/** The instance columns from the most useful to the least (which stay on a narrow terminal), as the vastai client's. */
const INSTANCE_USEFULNESS = [
  'id', 'actual_status', 'label', 'gpu_name', 'num_gpus', 'dph_total', 'image_uuid', 'ssh_host', 'ssh_port', 'uptime_mins',
  'disk_space', 'machine_id', 'gpu_util', 'cpu_cores_effective', 'cpu_ram', 'reliability2',
];

export const instanceColumns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'machine_id', header: 'Machine', align: 'right' as const },
  // The spec's null state is "Instance being provisioned": said in words, not `-` (issue 29 item 9).
  { key: 'actual_status', header: 'Status', empty: PROVISIONING },
  { key: 'num_gpus', header: 'N', fmt: (v: number) => `${v}x`, align: 'right' as const },
  { key: 'gpu_name', header: 'Model' },
  { key: 'gpu_util', header: 'Util %', fmt: fixed(1), align: 'right' as const },
  { key: 'cpu_cores_effective', header: 'vCPUs', fmt: fixed(1), align: 'right' as const },
  { key: 'cpu_ram', header: 'RAM GB', fmt: fixed(1, 1 / MB_PER_GB), align: 'right' as const },
  { key: 'disk_space', header: 'Disk GB', fmt: fixed(0), align: 'right' as const },
  { key: 'ssh_host', header: 'SSH host' },
  { key: 'ssh_port', header: 'SSH port', align: 'right' as const },
  { key: 'dph_total', header: '$/hr', fmt: fixed(4), align: 'right' as const },
  { key: 'image_uuid', header: 'Image' },
  { key: 'reliability2', header: 'R %', fmt: fixed(1, PERCENT), align: 'right' as const },
  { key: 'label', header: 'Label' },
  { key: 'uptime_mins', header: 'Uptime min', fmt: fixed(1), align: 'right' as const },
].map((c) => ({ ...c, rank: INSTANCE_USEFULNESS.indexOf(c.key) })) as Column<Instance>[];

/**
 * The other fields `show instance` prints, each a column `--columns` may name (issue 29 item 10: `status_msg` was
 * shown there and refused here); left out of the default table.
 */
const OPTIONAL_INSTANCE_COLUMNS: Column<Instance>[] = [
  { key: 'intended_status', header: 'Intended' },
  { key: 'status_msg', header: 'Message' },
  { key: 'image_runtype', header: 'Runtype' },
  { key: 'is_bid', header: 'Bid', fmt: (v: unknown) => (v ? 'yes' : 'no') },
  { key: 'public_ipaddr', header: 'IP' },
  { key: 'ports', header: 'Ports' },
  { key: 'start_date', header: 'Started (UTC)', fmt: utc },
].map((c) => ({ ...c, optional: true }));

const RECORD_FIELDS = [
  'id', 'label', 'actual_status', 'intended_status', 'status_msg', 'machine_id', 'num_gpus', 'gpu_name', 'image_uuid',
  'image_runtype', 'disk_space', 'dph_total', 'is_bid', 'ssh_host', 'ssh_port', 'public_ipaddr', 'ports', 'start_date',
].map((key) => ({ key, fmt: key === 'start_date' ? utc : undefined, empty: key === 'actual_status' ? PROVISIONING : undefined }));

/**
 * Issue 32: a running instance's ways in from a browser, after its record: each port's URL through the server
 * (`port_urls`) and Jupyter's link (`jupyter_url`, token included), with how a port URL is opened (it needs a
 * credential: the console's Open, or the port's token).
 */
export function webLines(inst: Record<string, unknown>): string {
  const urls = Object.entries((inst.port_urls ?? {}) as Record<string, string>);
  const jupyter = typeof inst.jupyter_url === 'string' ? inst.jupyter_url : null;
  if (!urls.length && !jupyter) return '';
  const rows: [string, string][] = urls.map(([port, url]) => [`port ${port}`, url]);
  if (jupyter) rows.push(['jupyter_url', jupyter]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`);
  if (urls.length) {
    const [port] = urls[0][0].split('/');
    lines.push(
      `(a port URL opens with the web console's Open, or with the port's token: ` +
        `\`gpuplane create port-token ${String(inst.id)} ${port}\` makes one; send it as the x-gpuplane-port-token header or open the url it gives)`,
    );
  }
  return `\n\n${lines.join('\n')}`;
}

/**
 * Waits with a live status line; returns the instance, or throws (exit 3 on failure, 4 on timeout). Ctrl-C stops the
 * wait, not the instance, and prints the command that waits again (exit 130; issue 29 item 10: it said nothing).
 */
async function waitWithStatus(ctx: Ctx, id: number, until: string, timeout: number): Promise<Instance> {
  const line = statusLine(`instance ${id}`, ctx.io.stderr);
  const interrupt = new AbortController();
  const stopListening = ctx.io.onInterrupt?.(() => interrupt.abort());
  try {
    const inst = await ctx.client.waitForInstance(id, { until, timeout, signal: interrupt.signal, onStatus: (s) => line.update(s ?? PROVISIONING) });
    line.done(inst.actual_status ?? until);
    return inst as Instance;
  } catch (err) {
    line.done();
    if (!interrupt.signal.aborted) throw err;
    const resume = hinted(`wait instance ${id} --until ${until}${timeout !== DEFAULT_WAIT_TIMEOUT_S ? ` --timeout ${timeout}` : ''}`);
    throw new InterruptedError(`stopped waiting; instance ${id} goes on as before (it is not stopped). Wait again with ${resume}`);
  } finally {
    stopListening?.();
  }
}

/**
 * Where SSH logs in, as the vastai client's ssh-url computes it (client-compat-connect.md): a published port 22 on the
 * machine's address, else `ssh_host:ssh_port`, one port up for Jupyter runtypes (the SSH gateway's mapping).
 */
function sshUrl(i: Instance): string | undefined {
  const published = (i.ports as Record<string, { HostPort: string }[]> | undefined)?.['22/tcp']?.[0]?.HostPort;
  if (published && typeof i.public_ipaddr === 'string') return `ssh://root@${i.public_ipaddr}:${published}`;
  if (!i.ssh_host || typeof i.ssh_port !== 'number') return undefined;
  const jupyter = typeof i.image_runtype === 'string' && i.image_runtype.includes('jupyter');
  return `ssh://root@${i.ssh_host}:${i.ssh_port + (jupyter ? 1 : 0)}`;
}

interface CreateOpts {
  image?: string;
  template_hash?: string;
  disk?: number;
  env?: string;
  label?: string;
  onstart?: string;
  onstartCmd?: string;
  entrypoint?: string;
  login?: string;
  ssh?: boolean;
  jupyter?: boolean;
  direct?: boolean;
  jupyterDir?: string;
  jupyterLab?: boolean;
  langUtf8?: boolean;
  pythonUtf8?: boolean;
  price?: number;
  bid_price?: number;
  cancelUnavail?: boolean;
  vm?: boolean;
  force?: boolean;
  user?: string;
  stopped?: boolean;
  wait?: boolean;
  timeout: number;
}

export function createBody(o: CreateOpts, args: string[] | undefined): Record<string, unknown> {
  let onstart = o.onstartCmd ?? o.entrypoint ?? null;
  if (o.onstart !== undefined) {
    try {
      onstart = readFileSync(o.onstart, 'utf8');
    } catch {
      throw new UsageError(`cannot read the onstart file ${o.onstart}`);
    }
  }
  if (onstart !== null) onstart = encodeOnstart(onstart, o.onstart !== undefined ? '--onstart' : o.onstartCmd !== undefined ? '--onstart-cmd' : '--entrypoint');
  if (o.price !== undefined && o.bid_price !== undefined && o.price !== o.bid_price) throw new UsageError('give one of --price and --bid_price');
  // Every key is sent, null when unset, as the vastai client does (client-compat).
  const body: Record<string, unknown> = {
    client_id: 'me',
    image: o.image ?? null,
    env: parseEnv(o.env),
    price: o.price ?? o.bid_price ?? null,
    disk: o.disk ?? null,
    label: o.label ?? null,
    extra: null,
    onstart,
    image_login: o.login ?? null,
    python_utf8: o.pythonUtf8 ?? null,
    lang_utf8: o.langUtf8 ?? null,
    use_jupyter_lab: o.jupyterLab ?? null,
    jupyter_dir: o.jupyterDir ?? null,
    force: o.force ?? null,
    cancel_unavail: o.cancelUnavail ?? null,
    template_hash_id: o.template_hash ?? null,
    user: o.user ?? null,
  };
  if (o.vm) body.vm = true;
  if (o.stopped) body.target_state = 'stopped';
  if (o.template_hash === undefined) body.runtype = runtypeOf({ ...o, args });
  if (args !== undefined) body.args = args;
  if (!o.image && !o.template_hash) throw new UsageError('create instance needs --image or --template_hash');
  return body;
}

export function registerInstances(program: Command, verb: (name: string, what: string) => Command): void {
  const create = verb('create', 'create: instance');
  containerOptions(create
    .command('instance')
    .description('rent an offer: create an instance from an offer id (from search offers)')
    .argument('<offer_id>', 'offer id', intArg('offer_id'))
    .option('--image <image>', 'Docker image')
    .option('--disk <GB>', 'local disk in GB (server default 8)', numberArg('--disk', 0)))
    .option('--price <dollars>', 'bid price in $/hour: an interruptible (bid) instance', numberArg('--price', 0))
    .option('--bid_price <dollars>', 'same as --price', numberArg('--bid_price', 0))
    .option('--cancel-unavail', 'fail at once if the offer cannot start now')
    .option('--vm', 'a VM instead of a container (an SSH key must be registered first)')
    .option('--force', 'accepted for compatibility')
    .option('--user <user>', 'user for docker create')
    .option('--stopped', 'create it stopped (target_state stopped)')
    .option('--wait', 'wait until it is running, with a live status line')
    .option('--timeout <seconds>', 'give up waiting after this long', numberArg('--timeout', 0), DEFAULT_WAIT_TIMEOUT_S)
    .option('--args <words...>', 'arguments for the image ENTRYPOINT; must be last (everything after it is taken)')
    .addHelpText('after', `
Example:
  gpuplane create instance 2001 --image pytorch/pytorch --disk 40 --env '-p 8081:8081/udp -h billybob' --ssh --direct --onstart-cmd 'echo up' --wait
  gpuplane create instance 2001 --template_hash 4f2a9c... --price 0.2
  gpuplane create instance 2001 --image alpine --args sh -c 'echo hi; sleep infinity'`)
    .action(
      action(async (ctx, offerId: number, o: CreateOpts) => {
        const r = await ctx.client.instances.create(offerId, createBody(o, ctx.run.argsRemainder) as never);
        if (!o.wait) {
          ctx.out.print(r, () => `created instance ${r.new_contract} from offer ${offerId}\ninstance API key (shown once): ${r.instance_api_key}`);
          return;
        }
        if (!ctx.raw) ctx.io.stdout.write(`created instance ${r.new_contract} from offer ${offerId}\n`);
        const inst = await waitWithStatus(ctx, r.new_contract, o.stopped ? 'stopped' : 'running', o.timeout);
        ctx.out.print({ ...r, instance: inst }, () => `instance ${inst.id} is ${inst.actual_status}${sshUrl(inst) ? ` (${sshUrl(inst)})` : ''}`);
      }),
    );

  const show = verb('show', 'show: instances, instance');
  show
    .command('instances')
    .description('list your instances')
    .addOption(columnsOption([...instanceColumns, ...OPTIONAL_INSTANCE_COLUMNS]))
    .addHelpText('after', '\nExample:\n  gpuplane show instances\n  gpuplane show instances -o id,actual_status,gpu_name,dph_total\n  gpuplane show instances --raw')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.instances.list();
        ctx.out.print(r.instances, () => (r.instances.length ? ctx.out.table(r.instances, [...instanceColumns, ...OPTIONAL_INSTANCE_COLUMNS]) : 'no instances'));
      }),
    );
  show
    .command('instance')
    .description('show one instance')
    .argument('<id>', 'instance id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane show instance 12')
    .action(
      action(async (ctx, id: number) => {
        const inst = await ctx.client.instances.show(id);
        ctx.out.print(inst, () => renderRecord(inst, RECORD_FIELDS) + webLines(inst as Record<string, unknown>));
      }),
    );

  for (const [name, what, run] of [
    ['start', 'start a stopped instance (compute billing resumes)', (c: Ctx, id: number) => c.client.instances.start(id)],
    ['stop', 'stop an instance (compute billing stops; disk charges continue)', (c: Ctx, id: number) => c.client.instances.stop(id)],
    ['destroy', 'destroy an instance (all its billing stops; its data is gone)', (c: Ctx, id: number) => c.client.instances.destroy(id)],
  ] as const) {
    verb(name, name === 'destroy' ? 'destroy: instance, instances, team' : `${name}: instance, instances, deployment`)
      .command('instance')
      .description(what)
      .argument('<id>', 'instance id', intArg('id'))
      .addHelpText('after', `\nExample:\n  gpuplane ${name} instance 12`)
      .action(
        action(async (ctx, id: number) => {
          const r = await run(ctx, id);
          ctx.out.print(r, () => r.msg ?? `${name === 'stop' ? 'stopping' : name === 'start' ? 'starting' : 'destroyed'} instance ${id}`);
        }),
      );
  }

  // `start instances 1 2 3` / `stop instances …`: one request for all (vastai vocabulary); each id succeeds or fails
  // on its own, and any failure makes the exit code 1 after the rest are done.
  for (const [name, state] of [['start', 'running'], ['stop', 'stopped']] as const) {
    verb(name, `${name}: instance, instances`)
      .command('instances')
      .description(`${name} several instances at once; reports each id that failed`)
      .argument('<ids...>', 'instance ids', (v: string, prev: number[] = []) => [...prev, intArg('id')(v)])
      .addHelpText('after', `\nExample:\n  gpuplane ${name} instances 12 13 14`)
      .action(
        action(async (ctx, ids: number[]) => {
          const r = await ctx.client.instances.setState(ids, state);
          ctx.out.print(r, () =>
            [
              ...(r.ids.length ? [`${name === 'stop' ? 'stopping' : 'starting'} ${r.ids.length === 1 ? 'instance' : 'instances'} ${r.ids.join(', ')}`] : []),
              ...r.failed.map((f) => `instance ${f.id}: ${f.msg} (${f.error})`),
            ].join('\n'),
          );
          if (!r.success) ctx.run.exitCode = EXIT.error;
        }),
      );
  }

  verb('label', 'label: instance')
    .command('instance')
    .description('set the label of an instance')
    .argument('<id>', 'instance id', intArg('id'))
    .argument('<label>', 'the new label')
    .addHelpText('after', '\nExample:\n  gpuplane label instance 12 "training run 3"')
    .action(
      action(async (ctx, id: number, label: string) => {
        const r = await ctx.client.instances.label(id, label);
        ctx.out.print(r, () => `label of instance ${id} set to ${JSON.stringify(label)}`);
      }),
    );

  verb('change', 'change: bid')
    .command('bid')
    .description('change the bid price of an interruptible (bid) instance')
    .argument('<id>', 'instance id', intArg('id'))
    .requiredOption('--price <dollars>', 'new bid in $/hour', numberArg('--price', 0))
    .addHelpText('after', '\nExample:\n  gpuplane change bid 12 --price 0.35')
    .action(
      action(async (ctx, id: number, o: { price: number }) => {
        const r = await ctx.client.instances.changeBid(id, o.price);
        ctx.out.print(r, () => r.msg ?? `bid of instance ${id} changed to $${o.price}/hr`);
      }),
    );

  program
    .command('logs')
    .description('print the log of an instance')
    .argument('<id>', 'instance id', intArg('id'))
    .option('--tail <lines>', 'only the last lines', intArg('--tail'))
    .option('--filter <text>', 'only lines containing this text')
    .addHelpText('after', '\nExample:\n  gpuplane logs 12 --tail 100')
    .action(
      action(async (ctx, id: number, o: { tail?: number; filter?: string }) => {
        const text = await ctx.client.instances.logs(id, { tail: o.tail, filter: o.filter });
        if (ctx.raw) ctx.out.print({ id, log: text }, () => text);
        else ctx.io.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
      }),
    );

  program
    .command('ssh-url')
    .description('print the ssh:// URL of a running instance')
    .argument('<id>', 'instance id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane ssh-url 12        (then: ssh $(gpuplane ssh-url 12))')
    .action(
      action(async (ctx, id: number) => {
        const inst = await ctx.client.instances.show(id);
        const url = sshUrl(inst);
        if (!url) throw new Error(`instance ${id} has no SSH address (it is ${inst.actual_status ?? PROVISIONING})`);
        ctx.out.print({ id, ssh_url: url }, () => url);
      }),
    );

  verb('attach', 'attach: ssh')
    .command('ssh')
    .description('add an SSH public key to a running container instance')
    .argument('<id>', 'instance id', intArg('id'))
    .argument('<ssh_key>', 'the public key line')
    .addHelpText('after', '\nExample:\n  gpuplane attach ssh 12 "$(cat ~/.ssh/id_ed25519.pub)"')
    .action(
      action(async (ctx, id: number, key: string) => {
        const r = await ctx.client.instances.attachSsh(id, key);
        ctx.out.print(r, () => `${r.msg} (key ${r.key_id})`);
      }),
    );
  create
    .command('port-token')
    .description('make a new token of an instance port (the old one stops working): its URL through the server opens with it')
    .argument('<id>', 'instance id', intArg('id'))
    .argument('<port>', 'the container port (as in port_urls, e.g. 8000)', intArg('port'))
    .addHelpText('after', '\nExample:\n  gpuplane create port-token 12 8000   (then: curl -H "x-gpuplane-port-token: TOKEN" URL)')
    .action(
      action(async (ctx, id: number, port: number) => {
        const r = await ctx.client.instances.portToken(id, port);
        ctx.out.print(r, () => `token ${r.token} (shown once)\nurl   ${r.url}`);
      }),
    );
  verb('detach', 'detach: ssh')
    .command('ssh')
    .description('remove an SSH key from an instance')
    .argument('<id>', 'instance id', intArg('id'))
    .argument('<key_id>', 'the key id (from attach ssh)', intArg('key_id'))
    .addHelpText('after', '\nExample:\n  gpuplane detach ssh 12 3')
    .action(
      action(async (ctx, id: number, keyId: number) => {
        const r = await ctx.client.instances.detachSsh(id, keyId);
        ctx.out.print(r, () => r.msg ?? `detached key ${keyId} from instance ${id}`);
      }),
    );

  verb('wait', 'wait: instance')
    .command('instance')
    .description('wait until an instance reaches a state, with a live status line; exits 3 if it fails, 4 on timeout')
    .argument('<id>', 'instance id', intArg('id'))
    .option('--until <state>', 'the state to wait for', 'running')
    .option('--timeout <seconds>', 'give up after this long', numberArg('--timeout', 0), DEFAULT_WAIT_TIMEOUT_S)
    .addHelpText('after', '\nExample:\n  gpuplane wait instance 12 --until running --timeout 300')
    .action(
      action(async (ctx, id: number, o: { until: string; timeout: number }) => {
        const inst = await waitWithStatus(ctx, id, o.until, o.timeout);
        ctx.out.print(inst, () => `instance ${id} is ${inst.actual_status}${sshUrl(inst) ? ` (${sshUrl(inst)})` : ''}`);
      }),
    );
}

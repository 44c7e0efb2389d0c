/**
 * Volume offers and what needs shared storage or cross-host networking, as the vastai client names them:
 * `unlist volume` (works), and `clone volume`, overlays, network disks and network volumes, which this server answers
 * with a 503 saying what it lacks (their lists are empty).
 */
import type { Command } from 'commander';
import { action, intArg, numberArg, UsageError } from '../context.js';
import { parseOfferQuery, QueryError } from '../offer-query.js';
import { dateArg } from './machines.js';
import type { Groups } from '../program.js';

export function registerNetwork(g: Groups, verb: (name: string, what: string) => Command): void {
  const unlist = verb('unlist', 'unlist: machine, volume, network-volume (no new rentals; running ones continue)');
  const list = verb('list', 'list: machine, machines, network-volume');
  const join = verb('join', 'join: cluster, overlay');
  const add = verb('add', 'add: network-disk');
  const clone = verb('clone', 'clone: volume');

  unlist
    .command('volume')
    .description('stop offering your machine\'s disk as volumes (the volume offer id, from search volumes); volumes made stay')
    .argument('<id>', 'volume offer id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane unlist volume 1200')
    .action(action(async (ctx, id: number) => {
      const r = await ctx.client.volumes.unlist(id);
      ctx.out.print(r, () => r.msg);
    }));
  clone
    .command('volume')
    .description('copy a volume into a new one from a volume offer (not available on this server: no host-to-host transfer)')
    .argument('<source>', 'your volume id', intArg('source'))
    .argument('<dest>', 'volume offer id', intArg('dest'))
    .option('-s, --size <GB>', 'size of the new volume', numberArg('--size', 0))
    .option('-d, --disable_compression', 'copy without compression')
    .addHelpText('after', '\nExample:\n  gpuplane clone volume 7 1300 -s 50')
    .action(action(async (ctx, src: number, dst: number, o: { size?: number; disable_compression?: boolean }) => {
      const r = await ctx.client.volumes.copy({ src_id: src, dst_id: dst, size: o.size, disable_compression: o.disable_compression });
      ctx.out.print(r, () => r.msg);
    }));

  g.show
    .command('overlays')
    .description('your overlay networks (none: this server sets up no cross-host networking)')
    .addHelpText('after', '\nExample:\n  gpuplane show overlays')
    .action(action(async (ctx) => {
      const rows = await ctx.client.network.overlays();
      ctx.out.print(rows, () => (rows.length ? JSON.stringify(rows) : 'no overlays'));
    }));
  g.create
    .command('overlay')
    .description('create an overlay network on a cluster (not available on this server)')
    .argument('<cluster_id>', 'cluster id', intArg('cluster_id'))
    .argument('<name>', 'overlay name')
    .addHelpText('after', '\nExample:\n  gpuplane create overlay 3 mynet')
    .action(action(async (ctx, clusterId: number, name: string) => {
      const r = await ctx.client.network.createOverlay(clusterId, name);
      ctx.out.print(r, () => r.msg);
    }));
  g.delete
    .command('overlay')
    .description('delete an overlay network by id or name (not available on this server)')
    .argument('<overlay>', 'overlay id or name')
    .addHelpText('after', '\nExample:\n  gpuplane delete overlay mynet')
    .action(action(async (ctx, overlay: string) => {
      const r = await ctx.client.network.deleteOverlay(/^\d+$/.test(overlay) ? Number(overlay) : overlay);
      ctx.out.print(r, () => r.msg);
    }));
  join
    .command('overlay')
    .description('add an instance to an overlay network (not available on this server)')
    .argument('<name>', 'overlay name')
    .argument('<instance_id>', 'instance id', intArg('instance_id'))
    .addHelpText('after', '\nExample:\n  gpuplane join overlay mynet 12')
    .action(action(async (ctx, name: string, instanceId: number) => {
      const r = await ctx.client.network.joinOverlay(name, instanceId);
      ctx.out.print(r, () => r.msg);
    }));

  g.show
    .command('network-disks')
    .description('your network disks (none: this server manages no shared storage)')
    .addHelpText('after', '\nExample:\n  gpuplane show network-disks')
    .action(action(async (ctx) => {
      const rows = await ctx.client.network.networkDisks();
      ctx.out.print({ data: rows }, () => (rows.length ? JSON.stringify(rows) : 'no network disks'));
    }));
  add
    .command('network-disk')
    .description('attach a network disk to machines (not available on this server)')
    .argument('<args...>', 'machine ids, then the mount point')
    .option('-d, --disk_id <id>', 'an existing network disk', intArg('--disk_id'))
    .addHelpText('after', '\nExample:\n  gpuplane add network-disk 12 13 /mnt/shared')
    .action(action(async (ctx, words: string[], o: { disk_id?: number }) => {
      if (words.length < 2) throw new UsageError('give machine ids, then the mount point');
      const mount = words[words.length - 1];
      const r = await ctx.client.network.addNetworkDisk({ machines: words.slice(0, -1).map(intArg('machine id')), mount_point: mount, disk_id: o.disk_id });
      ctx.out.print(r, () => `Attached network disk to machines. Disk id: ${r.disk_id}`);
    }));

  g.search
    .command('network-volumes')
    .description('search network volume offers (none: this server manages no shared storage)')
    .argument('[query...]', 'comparisons, as search volumes')
    .option('--limit <n>', 'at most this many', intArg('--limit'))
    .addHelpText('after', '\nExample:\n  gpuplane search network-volumes')
    .action(action(async (ctx, words: string[], o: { limit?: number }) => {
      let body: Record<string, unknown>;
      try {
        body = parseOfferQuery(words.join(' '), {});
      } catch (err) {
        if (err instanceof QueryError) throw new UsageError(err.message);
        throw err;
      }
      if (o.limit !== undefined) body.limit = o.limit;
      const r = await ctx.client.network.searchNetworkVolumes(body);
      ctx.out.print(r.offers, () => (r.offers.length ? JSON.stringify(r.offers) : 'no network volume offers'));
    }));
  g.create
    .command('network-volume')
    .description('create a network volume from an offer (not available on this server)')
    .argument('<offer_id>', 'network volume offer id', intArg('offer_id'))
    .option('-s, --size <GB>', 'size', numberArg('--size', 0), 15)
    .option('-n, --name <name>', 'a name')
    .addHelpText('after', '\nExample:\n  gpuplane create network-volume 5 -s 50')
    .action(action(async (ctx, id: number, o: { size: number; name?: string }) => {
      const r = await ctx.client.network.createNetworkVolume({ id, size: o.size, name: o.name });
      ctx.out.print(r, () => r.msg);
    }));
  list
    .command('network-volume')
    .description('offer a network disk for rent as network volumes (not available on this server)')
    .argument('<disk_id>', 'network disk id', intArg('disk_id'))
    .option('-p, --price_disk <price>', '$/GB/month', numberArg('--price_disk', 0), 0.15)
    .option('-s, --size <GB>', 'size', numberArg('--size', 0), 15)
    .option('-e, --end_date <date>', 'the listing ends then: epoch seconds, MM/DD/YYYY or YYYY-MM-DD (UTC)')
    .addHelpText('after', '\nExample:\n  gpuplane list network-volume 4 -p 0.1 -s 500')
    .action(action(async (ctx, diskId: number, o: { price_disk: number; size: number; end_date?: string }) => {
      const r = await ctx.client.network.listNetworkVolume({
        disk_id: diskId, price_disk: o.price_disk, size: o.size, end_date: o.end_date === undefined ? undefined : dateArg('--end_date')(o.end_date),
      });
      ctx.out.print(r, () => r.msg);
    }));
  unlist
    .command('network-volume')
    .description('stop offering a network volume (not available on this server)')
    .argument('<offer_id>', 'network volume offer id', intArg('offer_id'))
    .addHelpText('after', '\nExample:\n  gpuplane unlist network-volume 5')
    .action(action(async (ctx, id: number) => {
      const r = await ctx.client.network.unlistNetworkVolume(id);
      ctx.out.print(r, () => r.msg);
    }));
}

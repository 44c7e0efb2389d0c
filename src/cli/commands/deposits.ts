/** Prepaid instances, as the vastai client names them: `prepay instance ID AMOUNT`, `show deposit ID`. */
import type { Command } from 'commander';
import { action, intArg, numberArg } from '../context.js';
import { renderRecord } from '../output.js';
import type { Groups } from '../program.js';

const round3 = (x: number) => Math.round(x * 1000) / 1000;

export function registerDeposits(g: Groups, verb: (name: string, what: string) => Command): void {
  verb('prepay', 'prepay: instance (credit into its deposit, at a discount)')
    .command('instance')
    .description('move credit into an instance\'s deposit: its charges draw from it first, at a discount by the months it covers')
    .argument('<id>', 'instance id', intArg('id'))
    .argument('<amount>', 'dollars', numberArg('amount', 0))
    .addHelpText('after', `
The discount: 20 % from a month of the instance's list rates, 30 % from 3 months, 40 % from 6, at most the machine's
credit_discount_max. Destroying the instance refunds what is left of the deposit.

Example:
  gpuplane prepay instance 12 400`)
    .action(action(async (ctx, id: number, amount: number) => {
      const r = await ctx.client.deposits.prepay(id, amount);
      ctx.out.print(r, () =>
        `prepaid for ${round3(r.timescale)} months of instance ${id} applying $${amount} credits for a discount of ${round3(r.discount_rate * 100)}% (deposit $${r.deposit})`);
    }));
  g.show
    .command('deposit')
    .description('an instance\'s prepaid deposit: what is left, its discount, the months it covers')
    .argument('<id>', 'instance id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane show deposit 12')
    .action(action(async (ctx, id: number) => {
      const d = await ctx.client.deposits.show(id);
      ctx.out.print(d, () => renderRecord(d, ['instance_id', 'deposit', 'prepaid', 'used', 'refunded', 'discount_rate', 'timescale', 'dph_list', 'dph_discounted'].map((key) => ({ key }))));
    }));
}

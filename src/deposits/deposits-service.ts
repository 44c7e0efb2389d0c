/**
 * Prepaid instances (docs/spec/client-compat-more.md §c: `prepay instance`, `show deposit`): the policy of deposits-policy.ts over
 * billing's deposits (billing-deposits.ts). A prepay is one transaction: the instance locked, then its contract, then
 * the payer; the payer's exact balance must cover the amount, so two prepays at once never overdraw it.
 */
import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { toDollars, toMicro } from '../platform/money.js';
import { discountedRate, PPM } from '../billing/billing-contract.js';
import type { BillingService } from '../billing/billing-service.js';
import type { OwnedInstances } from '../instances/instances-contract.js';
import { monthsCovered, prepayDiscountPpm } from './deposits-policy.js';

/** Largest single prepay, dollars: a typo guard (as for credit transfers). */
export const PREPAY_MAX_DOLLARS = 1_000_000;

export interface DepositsDeps {
  db: Db;
  clock: Clock;
  billing: Pick<BillingService, 'prepay' | 'depositOf'>;
  instances: OwnedInstances;
  /** The machine's largest prepay discount (fraction), set by its host. */
  creditDiscountMax(machineId: number, tx: Tx): Promise<number | undefined>;
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

export function depositsServiceFactory({ db, clock, billing, instances, creditDiscountMax }: DepositsDeps) {
  return {
    async prepay(principal: Principal, id: number, amount: number) {
      if (!Number.isFinite(amount) || amount <= 0) throw badRequest('body.amount must be a positive number of dollars');
      if (amount > PREPAY_MAX_DOLLARS) throw badRequest(`body.amount must be at most ${PREPAY_MAX_DOLLARS} dollars`);
      const micro = toMicro(amount);
      if (micro < 1) throw badRequest('body.amount must be at least $0.000001');
      const { inst, result } = await db.transaction().execute(async (tx) => {
        const inst = await instances.lockOwned(principal, id, tx);
        // The deposit comes from the credit that pays the instance (and goes back there): in a team, the team owner's
        // (issue 29 item 17; before that rule, its renter's).
        if (inst.user_id !== principal.user.id) {
          throw new ApiError('permission_denied', `instance ${id} is paid by another account (a team's instances by its owner): only that account can prepay it`);
        }
        if (inst.is_bid) throw badRequest(`instance ${id} is interruptible (bid): prepaying applies to on-demand instances`);
        if (inst.rate_micro_per_hour <= 0) throw badRequest(`instance ${id} costs nothing per hour: there is nothing to prepay`);
        const cap = inst.machine_id === null ? 0 : ((await creditDiscountMax(inst.machine_id, tx)) ?? 0);
        const result = await billing.prepay(tx, {
          contract: inst.contract,
          userId: inst.user_id,
          amountMicro: micro,
          at: clock.now(),
          description: `prepaid deposit of instance ${id}`,
          discountFor: (deposit) => prepayDiscountPpm(deposit, inst.rate_micro_per_hour, cap),
        });
        return { inst, result };
      });
      const months = monthsCovered(result.depositMicro, inst.rate_micro_per_hour, result.discountPpm);
      const rate = result.discountPpm / PPM;
      return {
        success: true as const,
        timescale: round6(months),
        discount_rate: rate,
        deposit: toDollars(result.depositMicro),
        msg: `prepaid $${amount} into instance ${id}'s deposit ($${toDollars(result.depositMicro)}): ${round6(months)} months at a ${round6(rate * 100)}% discount`,
      };
    },

    async show(principal: Principal, id: number) {
      const inst = await instances.findOwned(principal, id);
      const s = await billing.depositOf(inst.contract);
      const discounted = discountedRate(inst.rate_micro_per_hour, s.discountPpm);
      return {
        success: true as const,
        instance_id: id,
        deposit: toDollars(s.remainingMicro),
        prepaid: toDollars(s.prepaidMicro),
        used: toDollars(s.prepaidMicro - s.remainingMicro - s.refundedMicro),
        refunded: toDollars(s.refundedMicro),
        discount_rate: s.discountPpm / PPM,
        timescale: round6(monthsCovered(s.remainingMicro, inst.rate_micro_per_hour, s.discountPpm)),
        dph_list: toDollars(inst.rate_micro_per_hour),
        dph_discounted: toDollars(discounted),
      };
    },
  };
}

export type DepositsService = ReturnType<typeof depositsServiceFactory>;

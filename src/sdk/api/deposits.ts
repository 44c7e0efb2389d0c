/** Prepaid instances: `PUT /api/v0/instances/prepay/{id}/`, `GET /api/v0/instances/balance/{id}/` (deposits-policy.ts). */
import type { Static } from 'typebox';
import type { DepositReply, PrepayBody, PrepayReply } from '../../deposits/deposits-schemas.js';
import type { Transport } from '../transport.js';

export type Prepaid = Static<typeof PrepayReply>;
export type Deposit = Static<typeof DepositReply>;

export function depositsApi(t: Transport) {
  return {
    /** Moves `amount` dollars of credit into the instance's deposit; its charges draw from it first, at a discount. */
    prepay: (id: number, amount: number) =>
      t.request<Prepaid>('PUT', `/api/v0/instances/prepay/${id}/`, { body: { amount } satisfies Static<typeof PrepayBody> }),
    /** What the instance's deposit has left, its discount, the months it covers. */
    show: (id: number) => t.request<Deposit>('GET', `/api/v0/instances/balance/${id}/`, { query: { owner: 'me' } }),
  };
}

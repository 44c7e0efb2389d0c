/** Subaccounts: accounts made under yours (`POST /api/v0/users/` with `parent_id`), listed with their balances. */
import type { Static } from 'typebox';
import type { SubaccountCreated, SubaccountsReply, SubaccountUser } from '../../subaccounts/subaccounts-schemas.js';
import type { SignUpBody } from '../../login/login-schemas.js';
import type { Transport } from '../transport.js';

export type Subaccount = Static<typeof SubaccountUser>;
export type NewSubaccount = Pick<Static<typeof SignUpBody>, 'email' | 'password' | 'full_name' | 'username' | 'host_only'>;

export function subaccountsApi(t: Transport) {
  return {
    list: async (): Promise<Subaccount[]> => (await t.request<Static<typeof SubaccountsReply>>('GET', '/api/v0/subaccounts', { query: { owner: 'me' } })).users,
    /**
     * Makes an account under yours; it logs in with this e-mail and password once the code e-mailed to it verifies the
     * address. Fund it with `payments.transferCredit`. `host_only`: it may host machines but not rent.
     */
    create: (sub: NewSubaccount) =>
      t.request<Static<typeof SubaccountCreated>>('POST', '/api/v0/users/', { body: { ...sub, parent_id: 'me' } satisfies Static<typeof SignUpBody> }),
  };
}

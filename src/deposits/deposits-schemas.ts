import { Type } from 'typebox';

/** `PUT /api/v0/instances/prepay/{id}/`: `{"amount": dollars}` as the vastai client sends it (docs/spec/client-compat-more.md §c). */
export const PrepayBody = Type.Object({
  amount: Type.Number({ exclusiveMinimum: 0, description: 'dollars moved from your credit into the instance\'s deposit' }),
});

/** The client needs `timescale` and `discount_rate` as numbers on success (it rounds and prints both). */
export const PrepayReply = Type.Object({
  success: Type.Literal(true),
  timescale: Type.Number({ description: 'months the whole deposit covers at the discounted rates' }),
  discount_rate: Type.Number({ description: 'fraction taken off the instance\'s rates while the deposit lasts' }),
  deposit: Type.Number({ description: 'the deposit after this prepay, dollars' }),
  msg: Type.String(),
});

/** `GET /api/v0/instances/balance/{id}/` (`show deposit`): any JSON is printed whole. */
export const DepositReply = Type.Object({
  success: Type.Literal(true),
  instance_id: Type.Integer(),
  deposit: Type.Number({ description: 'what the deposit has left now, dollars (refunded when the instance is destroyed)' }),
  prepaid: Type.Number({ description: 'everything prepaid into it, dollars' }),
  used: Type.Number({ description: 'what its charges have drawn from it, dollars' }),
  refunded: Type.Number({ description: 'what went back to your credit, dollars' }),
  discount_rate: Type.Number({ description: 'the discount while it lasts (0 once spent)' }),
  timescale: Type.Number({ description: 'months what is left covers at the discounted rates' }),
  dph_list: Type.Number({ description: 'the instance\'s rates, GPUs and disk, $/hour' }),
  dph_discounted: Type.Number({ description: 'the same with the discount taken off, $/hour' }),
});

export const DepositQuery = Type.Object({ owner: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: true });

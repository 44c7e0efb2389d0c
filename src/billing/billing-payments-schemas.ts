/** TypeBox schemas of credit transfers and invoices (client-compat-more §b), shared with the SDK. */
import { Type, type Static } from 'typebox';

/** `vastai transfer credit`: `{"sender": "me", "recipient": <e-mail or id as a string>, "amount": <dollars>}`. */
export const TransferCreditBody = Type.Object(
  {
    sender: Type.Optional(Type.Union([Type.Literal('me'), Type.Integer({ minimum: 1 })], { description: '"me" (the default), or your own user id.' })),
    recipient: Type.Union([Type.String({ minLength: 1, maxLength: 320 }), Type.Integer({ minimum: 1 })], { description: 'The recipient: an account e-mail or a user id.' }),
    amount: Type.Number({ description: 'Dollars to send.' }),
  },
  { additionalProperties: true },
);
export type TransferCreditBody = Static<typeof TransferCreditBody>;

export const OkMsgReply = Type.Object({ success: Type.Boolean(), msg: Type.String() });

/** `vastai show invoices`: `owner=me`, `sdate`/`edate` (epoch seconds), `inc_charges`. */
export const InvoicesQuery = Type.Object({
  owner: Type.Optional(Type.Literal('me')),
  sdate: Type.Optional(Type.Number()),
  edate: Type.Optional(Type.Number()),
  inc_charges: Type.Optional(Type.Boolean()),
});
export type InvoicesQuery = Static<typeof InvoicesQuery>;

const InvoiceRow = Type.Object({
  id: Type.String(),
  description: Type.String(),
  quantity: Type.Union([Type.Number(), Type.Null()]),
  rate: Type.Union([Type.Number(), Type.Null()]),
  amount: Type.Number(),
  timestamp: Type.Number(),
  type: Type.Union([Type.Literal('charge'), Type.Literal('payment')]),
  instance_id: Type.Union([Type.Integer(), Type.Null()]),
});

/** Both keys are required by the client (a KeyError otherwise). */
export const InvoicesReply = Type.Object({
  success: Type.Boolean(),
  invoices: Type.Array(InvoiceRow),
  current: Type.Object({ credit: Type.Number(), sdate: Type.Number(), edate: Type.Number() }),
});

/** `vastai search invoices '<query>'`: `select_cols`, `select_filters` (JSON texts). */
export const InvoiceSearchQuery = Type.Object({
  select_cols: Type.Optional(Type.String({ maxLength: 4096 })),
  select_filters: Type.Optional(Type.String({ maxLength: 16_384 })),
});

const nullable = <T extends ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()]);
/** A bare list of the user's invoice records (credit added and transfers). */
export const InvoiceSearchReply = Type.Array(
  Type.Object({
    id: Type.Integer(), user_id: Type.Integer(), when: Type.Number(), paid_on: Type.Number(), payment_expected: Type.Null(),
    amount_cents: Type.Integer(), is_credit: Type.Boolean(), is_delayed: Type.Boolean(), service: Type.String(), extra: Type.String(),
    transfer_group: Type.Union([Type.String(), Type.Null()]), failed: Type.Boolean(), refunded: Type.Boolean(), is_check: Type.Boolean(),
    balance_before: nullable(Type.Number()), balance_after: nullable(Type.Number()), original_amount: nullable(Type.Number()),
    event_id: Type.Null(), cut_amount: nullable(Type.Number()), cut_percent: nullable(Type.Number()), stripe_charge: Type.Null(),
    stripe_refund: Type.Null(), stripe_payout: Type.Null(), error: Type.Null(), paypal_email: Type.Null(),
  }),
);

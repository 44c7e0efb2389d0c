/**
 * TypeBox schemas of `GET /api/v0/charges/` (spec: Show charges), exported so the SDK takes its request and reply
 * types from what the server validates (`import type` + `Static<>`).
 */
import { Type, type Static } from 'typebox';

/** Spec Limits: charges `limit` min 1, default 20, max 500. */
export const CHARGES_LIMIT_MIN = 1;
export const CHARGES_LIMIT_DEFAULT = 20;
export const CHARGES_LIMIT_MAX = 500;

/** Depth of the tree format: endpoint → workergroup → contract → item. */
const CHARGE_DEPTH = 4;

/** The fields of one charge entry, without its children. */
const chargeFields = () => ({
  start: Type.Integer({ description: 'Unix seconds' }),
  end: Type.Integer({ description: 'Unix seconds' }),
  type: Type.String({ description: '`instance`, `volume` or `serverless`; a child item has its kind (`gpu`, `disk` …)' }),
  source: Type.Union([Type.String(), Type.Null()], { description: '`instance-<id>`, `endpoint-<id>` …; null on child items' }),
  description: Type.String(),
  amount: Type.Number({ description: 'dollars' }),
  metadata: Type.Record(Type.String(), Type.Unknown()),
});

/** The spec's charge entry, nested `depth` levels (a schema per level keeps serialization fast and typed). */
function chargeEntry(depth: number): any {
  return Type.Object({ ...chargeFields(), items: Type.Array(depth > 0 ? chargeEntry(depth - 1) : Type.Unknown()) });
}

const ChargeFields = Type.Object(chargeFields());
/** A charge entry: the schema's fields, with its children (items of a contract, contracts of a workergroup …). */
export type ChargeEntry = Static<typeof ChargeFields> & { items: ChargeEntry[] };

export const ChargesQuery = Type.Object({
  select_filters: Type.Optional(
    Type.String({ maxLength: 4096, description: 'JSON: `{"day": {"gte": S, "lte": E}, "type": {"in": ["instance", "volume", "serverless"]}}`' }),
  ),
  format: Type.Optional(Type.Union([Type.Literal('table'), Type.Literal('tree')], { default: 'table' })),
  latest_first: Type.Optional(Type.Boolean({ default: true })),
  limit: Type.Optional(Type.Integer({ minimum: CHARGES_LIMIT_MIN, maximum: CHARGES_LIMIT_MAX, default: CHARGES_LIMIT_DEFAULT })),
  after_token: Type.Optional(Type.String({ maxLength: 200 })),
  next_token: Type.Optional(Type.String({ maxLength: 200, description: 'alias of after_token' })),
});

export const ChargesReply = Type.Object({
  success: Type.Boolean(),
  count: Type.Integer(),
  total: Type.Integer(),
  next_token: Type.Union([Type.String(), Type.Null()]),
  results: Type.Array(chargeEntry(CHARGE_DEPTH)),
});
/** The reply, with `results` typed through every level (the schema's recursion is built by a function). */
export type ChargesReply = Omit<Static<typeof ChargesReply>, 'results'> & { results: ChargeEntry[] };

/** Largest credit change one `POST /_emu/credit` may make, in dollars. */
const MAX_CREDIT_CHANGE = 1e9;

/**
 * `POST /_emu/credit`: dollars to add to a user (negative: remove, to test a running-out balance). The user by id or
 * by account e-mail, one of the two (issue 29 item 10: a tester knows the address, seldom the id).
 */
export const EmuCreditBody = Type.Object({
  user_id: Type.Optional(Type.Integer({ minimum: 1, description: 'the user, by id (or give email)' })),
  email: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: 'the user, by account e-mail (or give user_id)' })),
  amount: Type.Number({ minimum: -MAX_CREDIT_CHANGE, maximum: MAX_CREDIT_CHANGE }),
});
export const EmuCreditReply = Type.Object({ success: Type.Boolean(), credit: Type.Number({ description: 'balance after the change, dollars' }) });

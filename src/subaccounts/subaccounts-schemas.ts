/** TypeBox schemas of the subaccount routes (docs/spec/client-compat-more.md §b), for the routes and the SDK. */
import { Type } from 'typebox';
import { UserObject } from '../users/users-types.js';

/**
 * A subaccount as `show subaccounts` prints it: the user object (the columns of `show user`; `credit` a number), its
 * parent, and whether it may only host. `username` is the name its parent gave it, or its e-mail.
 */
export const SubaccountUser = Type.Intersect([
  UserObject,
  Type.Object({
    parent_id: Type.Integer({ description: 'The account that made it' }),
    host_only: Type.Boolean({ description: 'May host machines but not rent' }),
  }),
]);

/** `GET /api/v0/subaccounts`: `{"users": [...]}` (the clients read `users`). */
export const SubaccountsReply = Type.Object({ success: Type.Boolean(), users: Type.Array(SubaccountUser) });

/** `POST /api/v0/users/` with `parent_id`: the new subaccount (`vastai create subaccount` prints the whole reply). */
export const SubaccountCreated = Type.Object({ success: Type.Boolean(), msg: Type.String(), user: SubaccountUser });

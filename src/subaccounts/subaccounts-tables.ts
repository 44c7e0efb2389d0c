/**
 * Subaccounts (docs/spec/client-compat-more.md §b): accounts made by another account (`vastai create subaccount`),
 * which sees them (`show subaccounts`) and may fund them (`transfer credit`). The account itself is a `users` row like
 * any other; this row says whose subaccount it is.
 */
export interface SubaccountsTable {
  /** The subaccount (users.id). */
  user_id: number;
  /** The account that made it (users.id). One level: a subaccount has no subaccounts. */
  parent_id: number;
  /** The name the parent gave it (the client's `--username`); shown by `show subaccounts`, not a login name. */
  username: string | null;
  /** 1: the account may host machines but not rent (instances, volumes). */
  host_only: number;
  created_at: number;
}

export interface SubaccountsTables {
  subaccounts: SubaccountsTable;
}

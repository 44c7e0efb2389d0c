import type { Generated } from 'kysely';

export interface UsersTable {
  id: Generated<number>;
  email: string;
  full_name: string;
  password_hash: string | null;
  credit_micro: number;
  ssh_key: string | null;
  is_admin: number;
  email_verified_at: number | null;
  tfa_status: string;
  phone_number: string | null;
  created_at: number;
}

export interface UsersTables {
  users: UsersTable;
}

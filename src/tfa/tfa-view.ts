import type { MethodRow } from './tfa-store.js';

/** Spec: only the last 4 digits of a phone number are visible. */
export function maskPhone(phone: string | null): string | null {
  if (phone === null) return null;
  const digits = phone.replace(/\D/g, '');
  const shown = digits.slice(-4);
  return `${phone.startsWith('+') ? '+' : ''}${'*'.repeat(Math.max(0, digits.length - shown.length))}${shown}`;
}

export interface MethodObject {
  id: number;
  user_id: number;
  method: 'sms' | 'totp';
  label: string;
  phone_number: string | null;
  is_primary: boolean;
  created_at: number;
  last_used: number | null;
  fail_count: number;
  locked_until: number | null;
}

/** The spec's 2FA method object. A lock that has run out shows as no lock (and no failures), as it now behaves. */
export function methodObject(m: MethodRow, now: number): MethodObject {
  const lapsed = m.locked_until !== null && m.locked_until <= now;
  return {
    id: m.id,
    user_id: m.user_id,
    method: m.method as 'sms' | 'totp',
    label: m.label,
    phone_number: m.method === 'sms' ? maskPhone(m.phone_number) : null,
    is_primary: m.is_primary === 1,
    created_at: m.created_at,
    last_used: m.last_used,
    fail_count: lapsed ? 0 : m.fail_count,
    locked_until: lapsed ? null : m.locked_until,
  };
}

export function defaultLabel(method: 'sms' | 'totp', phone: string | null): string {
  return method === 'sms' ? `SMS ${maskPhone(phone)?.slice(-4) ?? ''}`.trim() : 'Authenticator app';
}

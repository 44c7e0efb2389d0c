/** The Security settings page's logic without React (spec: 2FA endpoints; issue 15: Security settings). */

/** The text file of backup codes offered for download: one code a line, with what they are and when. */
export function backupCodesFile(email: string, codes: string[], createdAt: Date): string {
  return [
    `gpuplane backup codes for ${email}`,
    `Created ${createdAt.toISOString()}. Each code works once. Keep them somewhere safe.`,
    '',
    ...codes,
    '',
  ].join('\n');
}

/** A 6-digit code as typed: spaces and dashes removed; null when it is not six digits. */
export function normalizeCode(input: string): string | null {
  const c = input.replace(/[\s-]/g, '');
  return /^\d{6}$/.test(c) ? c : null;
}

/** An E.164 phone number as the API takes it (`+` and 7 to 15 digits); spaces, dots, dashes and brackets removed. */
export function normalizePhone(input: string): string | null {
  const p = input.replace(/[\s().-]/g, '');
  return /^\+[1-9]\d{6,14}$/.test(p) ? p : null;
}

/** The issuer and account an `otpauth://` URI names, for the words beside the QR code. */
export function describeProvisioningUri(uri: string): { issuer: string | null; account: string | null } {
  try {
    const u = new URL(uri);
    if (u.protocol !== 'otpauth:') return { issuer: null, account: null };
    const label = decodeURIComponent(u.pathname.replace(/^\/+/, ''));
    const [maybeIssuer, account] = label.includes(':') ? label.split(/:(.*)/s) : [null, label];
    return { issuer: u.searchParams.get('issuer') ?? maybeIssuer ?? null, account: account || null };
  } catch {
    return { issuer: null, account: null };
  }
}
